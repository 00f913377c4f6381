package containerd

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podvisor/podvisor/supervise"
	"github.com/podvisor/podvisor/test/prereq"
	"golang.org/x/sys/unix"
)

func TestMajor(t *testing.T) {
	for v, want := range map[string]int{"1.6.20~ds1": 1, "v2.4.2": 2, "2.0.0-rc.1": 2, "": 0, "dev": 0} {
		if got := major(v); got != want {
			t.Errorf("major(%q) = %d, want %d", v, got, want)
		}
	}
}

// TestWithUserNS: the container joins the pod's user namespace with its
// mappings; with idmapped mounts the pod's volumes and files are mounted
// with the same mappings, never /dev/shm or the runtime's own mounts.
func TestWithUserNS(t *testing.T) {
	u := &supervise.UserNamespace{Path: "/run/x/user", HostID: 1 << 20, Size: 1 << 16}
	ids := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1 << 20, Size: 1 << 16}}
	vols := []specs.Mount{{Destination: "/data", Type: "bind", Source: "/v/data"}, {Destination: "/etc/hosts", Type: "bind", Source: "/v/hosts"}}
	for _, idmap := range []bool{true, false} {
		s := &oci.Spec{Linux: &specs.Linux{}, Mounts: append([]specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev/shm", Type: "bind", Source: "/run/x/shm"},
		}, vols...)}
		if err := withUserNS(u, idmap, vols)(context.Background(), nil, nil, s); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(s.Linux.Namespaces) != fmt.Sprint([]specs.LinuxNamespace{{Type: specs.UserNamespace, Path: u.Path}}) {
			t.Errorf("namespaces %v", s.Linux.Namespaces)
		}
		if fmt.Sprint(s.Linux.UIDMappings, s.Linux.GIDMappings) != fmt.Sprint(ids, ids) {
			t.Errorf("mappings %v %v", s.Linux.UIDMappings, s.Linux.GIDMappings)
		}
		for _, m := range s.Mounts {
			want := idmap && (m.Destination == "/data" || m.Destination == "/etc/hosts")
			if got := m.UIDMappings != nil && m.GIDMappings != nil; got != want {
				t.Errorf("idmap %v: mount %s idmapped %v, want %v", idmap, m.Destination, got, want)
			}
		}
	}
}

// TestCheckIDMappable: a filesystem with idmapped mounts passes, one
// without (procfs) is refused naming the kernel.
func TestCheckIDMappable(t *testing.T) {
	prereq.Root(t, "to create a user namespace and clone mounts")
	cmd := exec.Command("sleep", "60")
	ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1 << 20, Size: 1 << 16}}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER, UidMappings: ids, GidMappings: ids, GidMappingsEnableSetgroups: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	userns := fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	var uts unix.Utsname
	unix.Uname(&uts)
	if tmpfsIDMap(unix.ByteSliceToString(uts.Release[:])) {
		if err := checkIDMappable(dir, userns); err != nil {
			t.Errorf("tmpfs on this kernel: %v", err)
		}
	} else if err := checkIDMappable(dir, userns); err == nil || !strings.Contains(err.Error(), "tmpfs (idmapped from Linux 6.3 on)") {
		t.Errorf("tmpfs before 6.3: %v", err)
	}
	err := checkIDMappable("/proc", userns)
	if err == nil || !strings.Contains(err.Error(), "has no idmapped mounts on Linux") {
		t.Errorf("procfs: %v", err)
	}
}

// tmpfsIDMap: the kernel release is 6.3 or later.
func tmpfsIDMap(release string) bool {
	var maj, min int
	fmt.Sscanf(release, "%d.%d", &maj, &min)
	return maj > 6 || maj == 6 && min >= 3
}
