package loopfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/test/prereq"
	"golang.org/x/sys/unix"
)

// bound is how long one command may take.
const bound = time.Minute

// packages names the Debian package of each tool run here.
var packages = map[string]string{
	"losetup":    "mount",
	"mount":      "mount",
	"mkfs.ext4":  "e2fsprogs",
	"mkfs.btrfs": "btrfs-progs",
}

// need stops t, through prereq.Missing, unless it runs as root and tool is
// on PATH.
func need(t testing.TB, tool string) {
	t.Helper()
	prereq.Root(t, "to set up loop devices and mount filesystems")
	if _, err := exec.LookPath(tool); err != nil {
		pkg := packages[tool]
		if pkg == "" {
			pkg = "the package that has it"
		}
		prereq.Missing(t, fmt.Sprintf("%s (apt install %s; make deps installs it)", tool, pkg))
	}
}

// try runs name with args, bounded, and returns its output trimmed; its
// error names the command and holds its output.
func try(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// Run runs name with args, bounded by a minute, and returns its output
// trimmed; when it fails, t fails with the command and its output.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := try(name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tempDir is a new directory named pv-loopfs-<what>-* under $TMPDIR,
// removed when the test ends (after what is registered later).
func tempDir(t testing.TB, what string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pv-loopfs-"+what+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("loopfs: removing %s: %v", dir, err)
		}
	})
	return dir
}

// Device sets up a loop device over a new sparse file of size bytes and
// returns both. The device is detached, and the file removed, when the
// test ends.
func Device(t testing.TB, size int64) (dev, backing string) {
	t.Helper()
	need(t, "losetup")
	backing = filepath.Join(tempDir(t, "dev"), "disk.img")
	if err := os.WriteFile(backing, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(backing, size); err != nil {
		t.Fatal(err)
	}
	dev = Run(t, "losetup", "--find", "--show", backing)
	t.Cleanup(func() {
		if _, err := try("losetup", "-d", dev); err != nil {
			t.Errorf("loopfs: %v", err)
		}
	})
	return dev, backing
}

// Mkfs makes a filesystem of type fstype on dev: mkfs.<fstype> -q, then
// args, then dev.
func Mkfs(t testing.TB, dev, fstype string, args ...string) {
	t.Helper()
	tool := "mkfs." + fstype
	need(t, tool)
	Run(t, tool, append(append([]string{"-q"}, args...), dev)...)
}

// Mount mounts dev, a filesystem of type fstype, with the options opts
// (none if empty) on a new directory and returns it, unmounted (lazily)
// when the test ends, before the device is detached. A failing mount is
// returned, not fatal, for the caller to try other options.
func Mount(t testing.TB, dev, fstype, opts string) (mnt string, err error) {
	t.Helper()
	need(t, "mount")
	mnt = filepath.Join(tempDir(t, "mnt"), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"-t", fstype}
	if opts != "" {
		args = append(args, "-o", opts)
	}
	if _, err := try("mount", append(args, dev, mnt)...); err != nil {
		return "", err
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			t.Errorf("loopfs: unmount %s: %v", mnt, err)
		}
	})
	return mnt, nil
}

// FS is a new filesystem of type fstype (mkfs.<fstype> -q, then
// mkfsArgs) of size bytes on a loop device, mounted with no options at a
// directory of its own, which it returns: unmounted, detached and removed
// when the test ends.
func FS(t testing.TB, fstype string, size int64, mkfsArgs ...string) string {
	t.Helper()
	need(t, "mkfs."+fstype) // before anything is set up
	dev, _ := Device(t, size)
	Mkfs(t, dev, fstype, mkfsArgs...)
	mnt, err := Mount(t, dev, fstype, "")
	if err != nil {
		t.Fatal(err)
	}
	return mnt
}
