package reclaim

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/podvisor/podvisor/internal/atomicfile"
)

// usageVersion is the state file's format; another version is ignored.
const usageVersion = 1

// use is what is known of one image name's (or digest's) use.
type use struct {
	// Last is when it was last seen starting or ceasing to be used.
	Last time.Time `json:"last"`
	// InUse: a manifest's pod or a container names it now.
	InUse bool `json:"inUse,omitempty"`
}

// usage tracks the last use of image names, written to its file only
// when a name starts or stops being used (or an image goes), never
// because time passed.
type usage struct {
	file  string
	byKey map[string]use
}

type usageFile struct {
	Version int            `json:"version"`
	Images  map[string]use `json:"images"`
}

// loadUsage reads the state file; a missing, broken or other-version file
// is an empty state (every image then counts as never used, ordered by
// age), the error said.
func loadUsage(file string) (*usage, error) {
	u := &usage{file: file, byKey: map[string]use{}}
	if file == "" {
		return u, nil
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return u, nil
	}
	var f usageFile
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err == nil && f.Version != usageVersion {
		err = fmt.Errorf("version %d, not %d", f.Version, usageVersion)
	}
	if err != nil {
		return u, fmt.Errorf("image last-use state %s ignored: %w", file, err)
	}
	for k, v := range f.Images {
		u.byKey[k] = v
	}
	return u, nil
}

// lastUsed is key's last use: now while in use, zero when never seen.
func (u *usage) lastUsed(now time.Time) func(string) time.Time {
	return func(key string) time.Time {
		v := u.byKey[key]
		if v.InUse {
			return now
		}
		return v.Last
	}
}

// observe takes the set of keys in use now; with present set (the
// names and digests the runtime holds), it also forgets the keys of
// images gone. It reports whether anything changed.
func (u *usage) observe(inUse map[string]bool, present map[string]bool, now time.Time) bool {
	changed := false
	for k := range inUse {
		if v := u.byKey[k]; !v.InUse {
			u.byKey[k] = use{Last: now, InUse: true}
			changed = true
		}
	}
	for k, v := range u.byKey {
		switch {
		case present != nil && !present[k] && !inUse[k]:
			delete(u.byKey, k)
			changed = true
		case v.InUse && !inUse[k]:
			u.byKey[k] = use{Last: now}
			changed = true
		}
	}
	return changed
}

// save writes the state file.
func (u *usage) save() error {
	if u.file == "" {
		return nil
	}
	b, err := json.Marshal(usageFile{Version: usageVersion, Images: u.byKey})
	if err == nil {
		err = os.MkdirAll(filepath.Dir(u.file), 0o700)
	}
	if err == nil {
		err = atomicfile.Write(u.file, b, 0o600)
	}
	if err != nil {
		return fmt.Errorf("save image last-use state: %w", err)
	}
	return nil
}
