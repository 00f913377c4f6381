package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/podvisor/podvisor/pressure"
	"k8s.io/apimachinery/pkg/api/resource"
)

// fullFraction is what is left of a filesystem podvisor calls full,
// whatever the thresholds say (--eviction-hard none included): podvisor
// could no longer write its state, nor containers their logs.
const fullFraction = 0.01

// checkDisks measures the filesystems of the state, log and images
// directories (bytes and inodes, as package pressure measures nodefs and
// imagefs) against the eviction thresholds of their signals: below a hard
// one fails, below a soft one warns, and a full filesystem fails.
func checkDisks(o Options) []Finding {
	var out []Finding
	for _, d := range []struct {
		flag, dir     string
		bytes, inodes pressure.Signal
	}{
		{"--state-dir", o.StateDir, pressure.NodeFsAvailable, pressure.NodeFsInodesFree},
		{"--log-dir", o.LogDir, pressure.NodeFsAvailable, pressure.NodeFsInodesFree},
		{"--images-dir", o.ImagesDir, pressure.ImageFsAvailable, pressure.ImageFsInodesFree},
	} {
		out = append(out, checkDisk(o, d.flag, existing(d.dir), d.bytes, d.inodes))
	}
	return out
}

func checkDisk(o Options, flag, dir string, bytesSig, inodesSig pressure.Signal) Finding {
	const check = "disk"
	obs, err := pressure.Observer{NodeFS: []string{dir}, ProcRoot: o.ProcRoot, CgroupRoot: o.CgroupRoot}.Observe()
	b, okB := obs[pressure.NodeFsAvailable]
	in, okI := obs[pressure.NodeFsInodesFree]
	if !okB || !okI {
		return fail(check, "check that "+flag+" names a directory podvisor can use", "%s %s: %v", flag, dir, err)
	}
	what := fmt.Sprintf("%s %s: %s of %s free, %d of %d inodes free", flag, dir, size(b.Available), size(b.Capacity), in.Available, in.Capacity)
	fix := "free space on the filesystem of " + dir + " (podvisor's images: podvisor images; old logs) or grow it"
	if below(b, pressure.Value{Percentage: fullFraction}) || below(in, pressure.Value{Percentage: fullFraction}) {
		return fail(check, fix, "%s: the filesystem is full", what)
	}
	worst := OK
	var met []string
	for _, t := range o.Thresholds {
		var obs pressure.Observation
		switch t.Signal {
		case bytesSig:
			obs = b
		case inodesSig:
			obs = in
		default:
			continue
		}
		if !below(obs, t.Value) {
			continue
		}
		met = append(met, t.String())
		if !t.Soft {
			worst = Fail
		} else if worst == OK {
			worst = Warn
		}
	}
	switch worst {
	case Fail:
		return fail(check, fix, "%s: below the eviction threshold %s: podvisor evicts pods", what, strings.Join(met, ", "))
	case Warn:
		return warn(check, fix, "%s: below the soft eviction threshold %s", what, strings.Join(met, ", "))
	}
	return ok(check, "%s", what)
}

func below(o pressure.Observation, v pressure.Value) bool { return o.Available < v.Of(o.Capacity) }

func size(n uint64) string {
	return resource.NewQuantity(int64(n), resource.BinarySI).String()
}

// existing is dir, or its nearest parent that exists: podvisor creates
// the directory there.
func existing(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			return d
		}
	}
}
