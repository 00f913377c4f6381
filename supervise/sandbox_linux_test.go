package supervise

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/podvisor/podvisor/test/prereq"

	"github.com/podvisor/podvisor/internal/layout"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// A sandbox is lost only on proof: a missing file or a file that is not a
// namespace or mount point. Anything else keeps it (and its containers).
func TestSandboxGone(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, nil, 0o644)
	if !nsGone(missing) || !nsGone(plain) {
		t.Error("a missing or plain file counts as a namespace")
	}
	if nsGone("/proc/self/ns/net") {
		t.Error("a real namespace file counts as gone")
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	if !mountGone(missing) || !mountGone(sub) {
		t.Error("a missing dir or a plain dir counts as mounted")
	}
	if mountGone("/proc") {
		t.Error("/proc counts as not mounted")
	}
	sb := &Sandbox{BootID: bootID()}
	if !sandboxAlive(sb) {
		t.Error("a hostNetwork+hostIPC sandbox of this boot is not alive")
	}
	sb.BootID = "another-boot"
	if sandboxAlive(sb) {
		t.Error("a sandbox of another boot is alive")
	}
}

func TestSaveRecordSkipsUnchanged(t *testing.T) {
	dir := t.TempDir()
	r := &podRecord{UID: "u", Namespace: "default", Name: "p"}
	l := layout.Layout{StateDir: dir}
	b, err := saveRecord(l, r, nil)
	if err != nil || len(b) == 0 {
		t.Fatalf("first save: %v", err)
	}
	p := l.RecordFile("u")
	os.Remove(p)
	if _, err := saveRecord(l, r, b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Error("an unchanged record was written again")
	}
	r.Name = "q"
	if _, err := saveRecord(l, r, b); err != nil {
		t.Fatal(err)
	}
	recs, errs := loadRecords(l)
	if len(errs) != 0 || recs["u"] == nil || recs["u"].Name != "q" {
		t.Fatalf("loaded %+v, %v", recs, errs)
	}
}

// hostSandboxes makes real namespaces and /dev/shm (as root), finds them
// again by ID, and removes them, also from the ID alone.
func TestHostSandboxes(t *testing.T) {
	prereq.Root(t, "to make namespaces")
	h := hostSandboxes{layout: layout.Layout{RunDir: t.TempDir()}}
	pod := &v1.Pod{}
	sb, err := h.Create(pod)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Alive(sb) || h.NetNS(sb) != sb.NetNS || sb.IPCNS == "" || sb.Shm == "" {
		t.Fatalf("sandbox %+v alive %v", sb, h.Alive(sb))
	}
	found := h.Find(sb.ID)
	if found.NetNS != sb.NetNS || found.IPCNS != sb.IPCNS || found.Shm != sb.Shm || !found.Network {
		t.Errorf("found %+v, made %+v", found, sb)
	}
	if err := h.Remove(&Sandbox{ID: sb.ID}); err != nil {
		t.Fatal(err)
	}
	if h.Alive(sb) || h.NetNS(sb) != "" {
		t.Error("a removed sandbox is alive")
	}
	if _, err := os.Stat(h.layout.SandboxDir(sb.ID)); !os.IsNotExist(err) {
		t.Errorf("sandbox dir left: %v", err)
	}
	if err := h.Remove(sb); err != nil {
		t.Errorf("second remove: %v", err)
	}
	// A sandbox made under another run dir is removed from its recorded
	// paths.
	other := hostSandboxes{layout: layout.Layout{RunDir: t.TempDir()}}
	moved, err := other.Create(pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Remove(moved); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other.layout.SandboxDir(moved.ID)); !os.IsNotExist(err) {
		t.Errorf("moved sandbox left: %v", err)
	}
	host, err := h.Create(&v1.Pod{Spec: v1.PodSpec{HostNetwork: true, HostIPC: true}})
	if err != nil || host.NetNS != "" || host.IPCNS != "" || !h.Alive(host) {
		t.Fatalf("host sandbox %+v, %v", host, err)
	}
	h.Remove(host)
}

// A sandbox's namespace files and /dev/shm are root's only: its directory
// is 0700 (so is the pods directory Create makes), and a host user cannot
// reach the shm even where the pods directory lets it in.
func TestSandboxDirPrivate(t *testing.T) {
	prereq.Root(t, "to make namespaces")
	run := t.TempDir()
	// The test's own temp dirs are 0700: open them so that only the modes
	// podvisor chooses stand between another user and the shm.
	for _, d := range []string{filepath.Dir(run), run} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := hostSandboxes{layout: layout.Layout{RunDir: run}}
	sb, err := h.Create(&v1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Remove(sb) })
	dir := h.layout.SandboxDir(sb.ID)
	for _, d := range []string{h.layout.Sandboxes(), dir} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s mode = %v, want 0700", d, fi.Mode().Perm())
		}
	}
	// A pods directory made wider (by an older podvisor, by an admin):
	// the sandbox's own mode still keeps the shm private.
	if err := os.Chmod(h.layout.Sandboxes(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := asNobody(func() error { return openDir(h.layout.Sandboxes()) }); err != nil {
		t.Fatalf("nobody cannot list the pods dir, so the test proves nothing: %v", err)
	}
	for _, p := range []string{sb.Shm, sb.NetNS, sb.IPCNS} {
		err := asNobody(func() error { return openPath(p) })
		if !errors.Is(err, unix.EACCES) {
			t.Errorf("nobody opening %s: %v, want permission denied", p, err)
		}
	}
}

func openDir(p string) error {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

func openPath(p string) error {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// asNobody runs f on a thread of its own with the credentials of user and
// group nobody and no capabilities. The thread is never unlocked, so it
// ends with f instead of going back to the runtime.
func asNobody(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Raw syscalls: the unix and syscall wrappers change every thread.
		const nobody = 65534
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			errc <- fmt.Errorf("setgroups: %w", e)
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, nobody, nobody, nobody); e != 0 {
			errc <- fmt.Errorf("setresgid: %w", e)
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, nobody, nobody, nobody); e != 0 {
			errc <- fmt.Errorf("setresuid: %w", e)
			return
		}
		errc <- f()
	}()
	return <-errc
}
