package mounts

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	v1 "k8s.io/api/core/v1"
)

func boolPtr(b bool) *bool { return &b }

// setupPod returns a set-up pod with an emptyDir "data" and a hostPath
// "host" volume.
func setupPod(t *testing.T) (Pod, string) {
	t.Helper()
	hostDir := t.TempDir()
	p := testPod(t, v1.PodSpec{Volumes: []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir}}},
	}})
	// Registered after the temp dirs, so it runs before they are removed:
	// removing a dir through a staging mount would delete the volume's
	// data.
	t.Cleanup(func() {
		if err := Cleanup(p.Dir); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			t.Error(err)
		}
	})
	if err := Setup(p); err != nil {
		t.Fatal(err)
	}
	return p, hostDir
}

// sameFile tells whether a and b are the same inode.
func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(fa, fb)
}

func mountAt(ms []specs.Mount, dst string) *specs.Mount {
	for i := range ms {
		if ms[i].Destination == dst {
			return &ms[i]
		}
	}
	return nil
}

func TestContainerMounts(t *testing.T) {
	requireRoot(t) // the subPath is bind-mounted
	p, hostDir := setupPod(t)
	c := &v1.Container{
		Name: "app",
		VolumeMounts: []v1.VolumeMount{
			{Name: "data", MountPath: "/var/lib/app/cache/sub", SubPath: "x/y"},
			{Name: "data", MountPath: "/var/lib/app"},
			{Name: "host", MountPath: "/host/", ReadOnly: true},
		},
		TerminationMessagePath: "/dev/custom-termination",
	}
	tlog := filepath.Join(p.Dir, "containers", "app", "0", "termination-log")
	ms, err := ContainerMounts(p, c, tlog)
	if err != nil {
		t.Fatalf("ContainerMounts: %v", err)
	}
	emptyDir := filepath.Join(p.Dir, "volumes", "empty-dir", "data")
	want := []specs.Mount{
		{Destination: "/host", Type: "bind", Source: hostDir, Options: []string{"rbind", "rprivate", "ro"}},
		{Destination: "/etc/hosts", Type: "bind", Source: filepath.Join(p.Dir, "etc-hosts"), Options: []string{"rbind", "rprivate", "rw"}},
		{Destination: "/etc/hostname", Type: "bind", Source: filepath.Join(p.Dir, "etc-hostname"), Options: []string{"rbind", "rprivate", "rw"}},
		{Destination: "/etc/resolv.conf", Type: "bind", Source: filepath.Join(p.Dir, "resolv.conf"), Options: []string{"rbind", "rprivate", "rw"}},
		{Destination: "/dev/custom-termination", Type: "bind", Source: tlog, Options: []string{"rbind", "rprivate", "rw"}},
		{Destination: "/var/lib/app", Type: "bind", Source: emptyDir, Options: []string{"rbind", "rprivate", "rw"}},
		{Destination: "/var/lib/app/cache/sub", Type: "bind", Source: filepath.Join(p.Dir, "volume-subpaths", "data", "app", "0"), Options: []string{"rbind", "rprivate", "rw"}},
	}
	if len(ms) != len(want) {
		t.Fatalf("got %d mounts %+v, want %d", len(ms), ms, len(want))
	}
	for i := range want {
		if ms[i].Destination != want[i].Destination || ms[i].Source != want[i].Source || ms[i].Type != want[i].Type || !slices.Equal(ms[i].Options, want[i].Options) {
			t.Errorf("mount %d = %+v, want %+v", i, ms[i], want[i])
		}
	}

	// The subPath directory was created inside the volume with its mode,
	// and the staging mount shows it.
	if fi, err := os.Stat(filepath.Join(emptyDir, "x", "y")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o777 {
		t.Errorf("subPath dir: %v %v, want a 0777 directory", fi, err)
	}
	if !sameFile(t, ms[len(ms)-1].Source, filepath.Join(emptyDir, "x", "y")) {
		t.Errorf("staging mount %s does not show the subPath directory", ms[len(ms)-1].Source)
	}
	// The termination log exists, empty, world-writable; computing the
	// mounts again does not erase what the container wrote.
	fi, err := os.Stat(tlog)
	if err != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o666 {
		t.Fatalf("termination log: %v %v, want an empty 0666 file", fi, err)
	}
	if err := os.WriteFile(tlog, []byte("boom"), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := ContainerMounts(p, c, tlog); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, tlog); got != "boom" {
		t.Errorf("termination log after second ContainerMounts = %q, want \"boom\"", got)
	}
}

func TestContainerMountsPodFiles(t *testing.T) {
	p, _ := setupPod(t)
	tests := []struct {
		name  string
		c     v1.Container
		check func(t *testing.T, ms []specs.Mount)
	}{
		{
			name: "container mounts its own /etc/hosts",
			c:    v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "host", MountPath: "/etc/hosts"}}},
			check: func(t *testing.T, ms []specs.Mount) {
				if m := mountAt(ms, "/etc/hosts"); m == nil || m.Source == filepath.Join(p.Dir, "etc-hosts") {
					t.Errorf("/etc/hosts mount = %+v, want only the container's own", m)
				}
				if n := strings.Count(destinations(ms), "/etc/hosts "); n != 1 {
					t.Errorf("/etc/hosts mounted %d times", n)
				}
				if mountAt(ms, "/etc/resolv.conf") == nil {
					t.Error("no /etc/resolv.conf")
				}
			},
		},
		{
			name: "readOnlyRootFilesystem",
			c:    v1.Container{Name: "c", SecurityContext: &v1.SecurityContext{ReadOnlyRootFilesystem: boolPtr(true)}},
			check: func(t *testing.T, ms []specs.Mount) {
				for dst, want := range map[string]string{"/etc/hosts": "rw", "/etc/hostname": "ro", "/etc/resolv.conf": "ro"} {
					if m := mountAt(ms, dst); m == nil || !slices.Contains(m.Options, want) {
						t.Errorf("%s = %+v, want %s", dst, m, want)
					}
				}
			},
		},
		{
			name: "no termination log",
			c:    v1.Container{Name: "c"},
			check: func(t *testing.T, ms []specs.Mount) {
				if len(ms) != 3 {
					t.Errorf("mounts = %s, want only the three pod files", destinations(ms))
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := ContainerMounts(p, &tt.c, "")
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, ms)
		})
	}
}

func TestDefaultTerminationMessagePath(t *testing.T) {
	p, _ := setupPod(t)
	ms, err := ContainerMounts(p, &v1.Container{Name: "c"}, filepath.Join(p.Dir, "containers", "c", "1", "termination-log"))
	if err != nil {
		t.Fatal(err)
	}
	if mountAt(ms, "/dev/termination-log") == nil {
		t.Errorf("no mount at /dev/termination-log in %s", destinations(ms))
	}
}

func TestVolumeMountOptions(t *testing.T) {
	p, _ := setupPod(t)
	prop := func(m v1.MountPropagationMode) *v1.MountPropagationMode { return &m }
	rro := func(m v1.RecursiveReadOnlyMode) *v1.RecursiveReadOnlyMode { return &m }
	tests := []struct {
		name       string
		vm         v1.VolumeMount
		privileged bool
		want       []string
		wantErr    string
	}{
		{name: "default", vm: v1.VolumeMount{}, want: []string{"rbind", "rprivate", "rw"}},
		{name: "None", vm: v1.VolumeMount{MountPropagation: prop(v1.MountPropagationNone)}, want: []string{"rbind", "rprivate", "rw"}},
		{name: "HostToContainer", vm: v1.VolumeMount{MountPropagation: prop(v1.MountPropagationHostToContainer)}, want: []string{"rbind", "rslave", "rw"}},
		{name: "Bidirectional privileged", vm: v1.VolumeMount{MountPropagation: prop(v1.MountPropagationBidirectional)}, privileged: true, want: []string{"rbind", "rshared", "rw"}},
		{name: "Bidirectional unprivileged", vm: v1.VolumeMount{MountPropagation: prop(v1.MountPropagationBidirectional)}, wantErr: "only to privileged containers"},
		{name: "recursive read-only", vm: v1.VolumeMount{ReadOnly: true, RecursiveReadOnly: rro(v1.RecursiveReadOnlyEnabled)}, want: []string{"rbind", "rprivate", "ro", "rro"}},
		{name: "recursive read-only if possible", vm: v1.VolumeMount{ReadOnly: true, RecursiveReadOnly: rro(v1.RecursiveReadOnlyIfPossible)}, want: []string{"rbind", "rprivate", "ro"}},
		{name: "recursive read-only needs readOnly", vm: v1.VolumeMount{RecursiveReadOnly: rro(v1.RecursiveReadOnlyEnabled)}, wantErr: "needs readOnly"},
		{name: "bind mount options", vm: v1.VolumeMount{BindMountOptions: []string{"noexec", "nosuid", "nodev"}}, want: []string{"rbind", "rprivate", "rw", "noexec", "nosuid", "nodev"}},
		{name: "bad bind mount option", vm: v1.VolumeMount{BindMountOptions: []string{"suid"}}, wantErr: `invalid bindMountOption "suid"`},
		{name: "subPathExpr", vm: v1.VolumeMount{SubPathExpr: "$(POD)"}, wantErr: "subPathExpr is not supported"},
		{name: "unknown volume", vm: v1.VolumeMount{Name: "nope"}, wantErr: `volumeMount "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := tt.vm
			if vm.Name == "" {
				vm.Name = "data"
			}
			vm.MountPath = "/mnt"
			c := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{vm}, SecurityContext: &v1.SecurityContext{Privileged: boolPtr(tt.privileged)}}
			ms, err := ContainerMounts(p, c, "")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m := mountAt(ms, "/mnt"); m == nil || !slices.Equal(m.Options, tt.want) {
				t.Errorf("mount = %+v, want options %v", m, tt.want)
			}
		})
	}
}

func TestSubPath(t *testing.T) {
	requireRoot(t)
	p, hostDir := setupPod(t)
	vol := filepath.Join(p.Dir, "volumes", "empty-dir", "data")
	outside := t.TempDir()
	for _, l := range []struct{ name, target string }{
		{"abs-out", outside},
		{"rel-out", "../../../.."},
		{"in", "inner"},
		{"chain", "in/deeper"},
		{"to-abs-in", filepath.Join(vol, "inner")},
	} {
		if err := os.Symlink(l.target, filepath.Join(vol, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(vol, "inner", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "inner", "file.conf"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A hostPath volume that contains a symlink to its own parent.
	if err := os.Symlink("..", filepath.Join(hostDir, "up")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, volume, subPath string
		wantSrc               string // relative to the volume
		wantErr               string
	}{
		{name: "plain dir", volume: "data", subPath: "inner", wantSrc: "inner"},
		{name: "file", volume: "data", subPath: "inner/file.conf", wantSrc: "inner/file.conf"},
		{name: "created", volume: "data", subPath: "new/dir", wantSrc: "new/dir"},
		{name: "dot components", volume: "data", subPath: "./inner/./deeper", wantSrc: "inner/deeper"},
		{name: "symlink inside", volume: "data", subPath: "in/file.conf", wantSrc: "inner/file.conf"},
		{name: "symlink chain inside", volume: "data", subPath: "chain", wantSrc: "inner/deeper"},
		{name: "absolute symlink inside", volume: "data", subPath: "to-abs-in", wantSrc: "inner"},
		{name: "dotdot", volume: "data", subPath: "../x", wantErr: "must not contain '..'"},
		{name: "dotdot in the middle", volume: "data", subPath: "inner/../../x", wantErr: "must not contain '..'"},
		{name: "absolute", volume: "data", subPath: "/etc", wantErr: "must be relative"},
		{name: "absolute symlink out", volume: "data", subPath: "abs-out", wantErr: "symlink abs-out leads outside the volume"},
		{name: "relative symlink out", volume: "data", subPath: "rel-out/etc", wantErr: "symlink rel-out leads outside the volume"},
		{name: "hostPath symlink out", volume: "host", subPath: "up", wantErr: "leads outside the volume"},
		{name: "through a file", volume: "data", subPath: "inner/file.conf/x", wantErr: "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: tt.volume, MountPath: "/mnt", SubPath: tt.subPath}}}
			ms, err := ContainerMounts(p, c, "")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			src := mountAt(ms, "/mnt").Source
			if want := filepath.Join(p.Dir, "volume-subpaths", tt.volume, "c", "0"); src != want {
				t.Errorf("source = %s, want the staging mount %s", src, want)
			}
			if !sameFile(t, src, filepath.Join(vol, tt.wantSrc)) {
				t.Errorf("staging mount %s does not show %s", src, tt.wantSrc)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "etc")); err == nil {
		t.Error("a rejected subPath created a directory outside the volume")
	}
}

func destinations(ms []specs.Mount) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Destination + " ")
	}
	return b.String()
}

// configMap, secret, downwardAPI and projected volumes are mounted
// read-only from their roots whatever readOnly says, and a subPath of one
// resolves through its ..data symlinks to the current version's file.
func TestContainerMountsContentVolumes(t *testing.T) {
	requireRoot(t)
	p := testPod(t, v1.PodSpec{Volumes: []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}},
		{Name: "down", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}},
		{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}},
	}})
	t.Cleanup(func() { Cleanup(p.Dir) })
	if err := Setup(p); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteVolume(p, &p.Spec.Spec.Volumes[0], Files{"k": {Data: []byte("v1"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	c := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{
		{Name: "cfg", MountPath: "/cfg"}, {Name: "sec", MountPath: "/sec"},
		{Name: "down", MountPath: "/down"}, {Name: "proj", MountPath: "/proj", ReadOnly: true},
		{Name: "cfg", MountPath: "/k", SubPath: "k"},
	}}
	ms, err := ContainerMounts(p, c, "")
	if err != nil {
		t.Fatal(err)
	}
	for dst, src := range map[string]string{"/cfg": "volumes/configmap/cfg", "/sec": "volumes/secret/sec", "/down": "volumes/downward-api/down", "/proj": "volumes/projected/proj"} {
		m := mountAt(ms, dst)
		if m == nil || m.Source != filepath.Join(p.Dir, src) || !slices.Contains(m.Options, "ro") {
			t.Errorf("%s: mount %+v, want read-only from %s", dst, m, src)
		}
	}
	m := mountAt(ms, "/k")
	if m == nil || !slices.Contains(m.Options, "ro") {
		t.Fatalf("subPath mount %+v", m)
	}
	if b, err := os.ReadFile(m.Source); err != nil || string(b) != "v1" {
		t.Errorf("subPath staging holds %q, %v", b, err)
	}
	// A new version does not reach the subPath copy.
	if _, err := WriteVolume(p, &p.Spec.Spec.Volumes[0], Files{"k": {Data: []byte("v2"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(m.Source); string(b) != "v1" {
		t.Errorf("subPath staging changed to %q", b)
	}
}
