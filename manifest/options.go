package manifest

import "log/slog"

// Load reads a whole directory once, with the Source's code: the same
// filters, per-document parsing, duplicate resolution, reference and
// permission checks. A directory that does not exist is an empty set. Load
// persists nothing and has no last-known-good state: every error counts.
func Load(dir, nodeName string) Snapshot {
	return LoadOptions(dir, nodeName, ParseOptions{})
}

// LoadOptions is Load with options.
func LoadOptions(dir, nodeName string, opts ParseOptions) Snapshot {
	sc := newScanner(dir, nodeName, slog.New(slog.DiscardHandler))
	sc.opts = opts
	snap, _ := sc.scan(scanRelist)
	return snap
}
