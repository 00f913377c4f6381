package containerd

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/podvisor/podvisor/supervise"
	"github.com/podvisor/podvisor/test/prereq"
)

// TestBlockDevicesReplaceHostDevice: a privileged container has every
// host device in its spec; its raw block volume at a path a host device
// also has (the host's own /dev/xvda) takes that path, so the pod gets
// its claim, never the host's disk.
func TestBlockDevicesReplaceHostDevice(t *testing.T) {
	prereq.Root(t, "to make a block device node")
	dev := filepath.Join(t.TempDir(), "claim")
	if err := unix.Mknod(dev, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 201))); err != nil {
		t.Fatal(err)
	}
	host := specs.LinuxDevice{Path: "/dev/xvda", Type: "b", Major: 202, Minor: 0}
	other := specs.LinuxDevice{Path: "/dev/xvdb", Type: "b", Major: 202, Minor: 16}
	s := &oci.Spec{Linux: &specs.Linux{Devices: []specs.LinuxDevice{host, other}}}
	opt := withBlockDevices([]supervise.BlockDevice{{HostPath: dev, ContainerPath: "/dev/xvda", Permissions: "rwm"}})
	if err := opt(context.Background(), nil, &containers.Container{}, s); err != nil {
		t.Fatal(err)
	}
	var got []specs.LinuxDevice
	for _, d := range s.Linux.Devices {
		if d.Path == "/dev/xvda" {
			got = append(got, d)
		}
	}
	if len(got) != 1 || got[0].Major != 7 || got[0].Minor != 201 {
		t.Errorf("devices at /dev/xvda: %+v; want only the claim's (7:201)", got)
	}
	if len(s.Linux.Devices) != 2 {
		t.Errorf("devices: %+v; want the claim's and the host's /dev/xvdb", s.Linux.Devices)
	}
}
