//go:build !linux

package manifest

// Off Linux there is no inotify: Run fails (inotify.Watch does), Load and
// Validate work.
const dirMask = 0

func entryEvent(uint32) (fileEvent, bool) { return 0, false }
