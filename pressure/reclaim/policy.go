package reclaim

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Policy is image GC's, as kubelet's ImageGCPolicy.
type Policy struct {
	// HighThresholdPercent is the image filesystem's usage at or above
	// which images are collected (kubelet's imageGCHighThresholdPercent).
	HighThresholdPercent int
	// LowThresholdPercent is the usage collection frees down to.
	LowThresholdPercent int
	// MinAge is how long an image must have been present before it may
	// be collected (a fresh pull may be about to be used).
	MinAge time.Duration
	// MaxAge, when more than 0, collects an image unused for longer,
	// whatever the disk.
	MaxAge time.Duration
}

// DefaultPolicy is kubelet's.
var DefaultPolicy = Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}

// Validate says what is wrong with p, as kubelet does.
func (p Policy) Validate() error {
	switch {
	case p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100:
		return fmt.Errorf("high threshold %d: must be in [0, 100]", p.HighThresholdPercent)
	case p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100:
		return fmt.Errorf("low threshold %d: must be in [0, 100]", p.LowThresholdPercent)
	case p.LowThresholdPercent > p.HighThresholdPercent:
		return fmt.Errorf("low threshold %d is above the high threshold %d", p.LowThresholdPercent, p.HighThresholdPercent)
	case p.MinAge < 0:
		return fmt.Errorf("minimum age %s: must not be negative", p.MinAge)
	case p.MaxAge < 0:
		return fmt.Errorf("maximum age %s: must not be negative (0: off)", p.MaxAge)
	case p.MaxAge > 0 && p.MaxAge < p.MinAge:
		return fmt.Errorf("maximum age %s is below the minimum age %s", p.MaxAge, p.MinAge)
	}
	return nil
}

// toFree is how many bytes to free on a filesystem of capacity bytes
// with available bytes free: none below the high threshold, else enough
// to reach the low one (kubelet's GarbageCollect).
func (p Policy) toFree(capacity, available uint64) uint64 {
	if capacity == 0 {
		return 0
	}
	available = min(available, capacity)
	usage := 100 - int(available*100/capacity)
	if usage < p.HighThresholdPercent {
		return 0
	}
	target := capacity / 100 * uint64(100-p.LowThresholdPercent)
	if target <= available {
		return 0
	}
	return target - available
}

// Image is one image name as the runtime stores it.
type Image struct {
	Name   string
	Digest string
	// Size of its content, 0 when unknown.
	Size uint64
	// Updated is when the name was created or last set.
	Updated time.Time
}

// group is one digest's content with all its names.
type group struct {
	Digest   string
	Names    []string
	Size     uint64
	Updated  time.Time // the newest name's
	LastUsed time.Time // zero: never seen used
}

// pins tells what may not be removed.
type pins interface {
	pinnedName(name string) bool
	pinnedDigest(digest string) bool
}

// groups gathers images by digest, and leaves out each digest a pinned
// name points at or that is pinned itself. lastUsed gives a name's or a
// digest's last use.
func groups(imgs []Image, p pins, lastUsed func(key string) time.Time) []group {
	by := map[string]*group{}
	pinned := map[string]bool{}
	for _, i := range imgs {
		g := by[i.Digest]
		if g == nil {
			g = &group{Digest: i.Digest, LastUsed: lastUsed(i.Digest)}
			by[i.Digest] = g
		}
		g.Names = append(g.Names, i.Name)
		g.Size = max(g.Size, i.Size)
		if i.Updated.After(g.Updated) {
			g.Updated = i.Updated
		}
		if t := lastUsed(i.Name); t.After(g.LastUsed) {
			g.LastUsed = t
		}
		if p.pinnedName(i.Name) || p.pinnedDigest(i.Digest) {
			pinned[i.Digest] = true
		}
	}
	var out []group
	for d, g := range by {
		if !pinned[d] {
			slices.Sort(g.Names)
			out = append(out, *g)
		}
	}
	// Oldest last use first, never used before all; then the oldest.
	slices.SortFunc(out, func(a, b group) int {
		return cmp.Or(a.LastUsed.Compare(b.LastUsed), a.Updated.Compare(b.Updated), cmp.Compare(a.Digest, b.Digest))
	})
	return out
}

// plan picks, from the unpinned groups in order, those to remove to free
// want bytes (all eligible ones for want math.MaxUint64): each at least
// MinAge old. Without enough eligible, it picks all of them; the caller
// compares what they free with want.
func (p Policy) plan(gs []group, now time.Time, want uint64) []group {
	var out []group
	var freed uint64
	for _, g := range gs {
		if freed >= want {
			break
		}
		if now.Sub(g.Updated) < p.MinAge {
			continue
		}
		out = append(out, g)
		freed += g.Size
	}
	return out
}

// expired picks the unpinned groups unused for longer than MaxAge (never
// used: present for longer), once podvisor has run for MaxAge since
// started (until then a last use may not have been seen yet).
func (p Policy) expired(gs []group, now, started time.Time) []group {
	if p.MaxAge <= 0 || now.Sub(started) <= p.MaxAge {
		return nil
	}
	var out []group
	for _, g := range gs {
		last := g.LastUsed
		if last.IsZero() {
			last = g.Updated
		}
		if now.Sub(last) > p.MaxAge && now.Sub(g.Updated) >= p.MinAge {
			out = append(out, g)
		}
	}
	return out
}
