package mounts

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/test/prereq"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

func requireRoot(t *testing.T) {
	t.Helper()
	prereq.Root(t, "mounts, device nodes")
}

// testPod returns a Pod with its own Dir and host files in a temp dir.
func testPod(t *testing.T, spec v1.PodSpec) Pod {
	t.Helper()
	tmp := t.TempDir()
	resolv := filepath.Join(tmp, "host-resolv.conf")
	hosts := filepath.Join(tmp, "host-hosts")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch example.org\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n192.0.2.2 node1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSDefault
	}
	return Pod{
		Spec:           &v1.Pod{Spec: spec},
		Dir:            filepath.Join(tmp, "pods", "uid1"),
		Hostname:       "web",
		HostResolvConf: resolv,
		HostHosts:      hosts,
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSetupFiles(t *testing.T) {
	p := testPod(t, v1.PodSpec{HostAliases: []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"db"}}}})
	if err := Setup(p); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	hostsPath := filepath.Join(p.Dir, "etc-hosts")
	if got, want := readFile(t, hostsPath), managedBoilerplate+"\n# Entries added by HostAliases.\n10.1.2.3\tdb\n"; got != want {
		t.Errorf("etc-hosts =\n%s\nwant\n%s", got, want)
	}
	if got := readFile(t, filepath.Join(p.Dir, "etc-hostname")); got != "web\n" {
		t.Errorf("etc-hostname = %q, want \"web\\n\"", got)
	}
	if got, want := readFile(t, filepath.Join(p.Dir, "resolv.conf")), "search example.org\nnameserver 192.0.2.53\n"; got != want {
		t.Errorf("resolv.conf = %q, want %q", got, want)
	}
	before, err := os.Stat(hostsPath)
	if err != nil {
		t.Fatal(err)
	}

	// The IP becomes known: the file changes in place (same inode), so a
	// container that already bind-mounts it sees the new line.
	p.PodIPs = []string{"10.88.0.7"}
	if err := Setup(p); err != nil {
		t.Fatalf("second Setup: %v", err)
	}
	if got := readFile(t, hostsPath); !strings.Contains(got, "10.88.0.7\tweb\n") {
		t.Errorf("etc-hosts after IPs are known lacks the pod line:\n%s", got)
	}
	after, err := os.Stat(hostsPath)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("etc-hosts was replaced by a new file instead of rewritten in place")
	}
	if after.Mode().Perm() != 0o644 {
		t.Errorf("etc-hosts mode = %v, want 0644", after.Mode().Perm())
	}
}

func TestSetupHostNetworkHosts(t *testing.T) {
	p := testPod(t, v1.PodSpec{HostNetwork: true})
	if err := Setup(p); err != nil {
		t.Fatal(err)
	}
	want := "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n192.0.2.2 node1\n"
	if got := readFile(t, filepath.Join(p.Dir, "etc-hosts")); got != want {
		t.Errorf("etc-hosts = %q, want %q", got, want)
	}
}

func TestSetupDNSNoneWithoutNameservers(t *testing.T) {
	p := testPod(t, v1.PodSpec{DNSPolicy: v1.DNSNone})
	if err := Setup(p); err == nil {
		t.Fatal("Setup succeeded for dnsPolicy None without nameservers")
	}
}

func hostPathType(t v1.HostPathType) *v1.HostPathType { return &t }

func TestHostPathTypes(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "dir")
	file := filepath.Join(base, "file")
	sock := filepath.Join(base, "sock")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	blockDev := ""
	if os.Geteuid() == 0 {
		blockDev = filepath.Join(base, "blk")
		if err := unix.Mknod(blockDev, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 200))); err != nil {
			t.Fatalf("mknod: %v", err)
		}
	}
	missing := func(name string) string { return filepath.Join(base, "missing-"+name, "sub", "leaf") }

	tests := []struct {
		name    string
		typ     v1.HostPathType
		path    string
		wantErr string // "" for success
		check   func(t *testing.T, path string)
	}{
		{name: "unset, missing", typ: v1.HostPathUnset, path: missing("unset")},
		{name: "DirectoryOrCreate creates", typ: v1.HostPathDirectoryOrCreate, path: missing("dir"), check: func(t *testing.T, p string) {
			fi, err := os.Stat(p)
			if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
				t.Errorf("created %s: %v %v, want a 0755 directory", p, fi, err)
			}
		}},
		{name: "DirectoryOrCreate existing", typ: v1.HostPathDirectoryOrCreate, path: dir},
		{name: "DirectoryOrCreate on a file", typ: v1.HostPathDirectoryOrCreate, path: file, wantErr: "hostPath type check failed: " + file + " is not a directory"},
		{name: "Directory", typ: v1.HostPathDirectory, path: dir},
		{name: "Directory missing", typ: v1.HostPathDirectory, path: missing("d2"), wantErr: "is not a directory"},
		{name: "Directory on a file", typ: v1.HostPathDirectory, path: file, wantErr: "is not a directory"},
		{name: "FileOrCreate creates", typ: v1.HostPathFileOrCreate, path: missing("file"), check: func(t *testing.T, p string) {
			fi, err := os.Stat(p)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 || fi.Size() != 0 {
				t.Errorf("created %s: %v %v, want an empty 0644 file", p, fi, err)
			}
		}},
		{name: "FileOrCreate existing", typ: v1.HostPathFileOrCreate, path: file, check: func(t *testing.T, p string) {
			if got := readFile(t, p); got != "x" {
				t.Errorf("existing file changed to %q", got)
			}
		}},
		{name: "FileOrCreate on a directory", typ: v1.HostPathFileOrCreate, path: dir, wantErr: dir + " is not a file"},
		{name: "File", typ: v1.HostPathFile, path: file},
		{name: "File on a directory", typ: v1.HostPathFile, path: dir, wantErr: "is not a file"},
		{name: "File on a socket", typ: v1.HostPathFile, path: sock, wantErr: "is not a file"},
		{name: "Socket", typ: v1.HostPathSocket, path: sock},
		{name: "Socket on a file", typ: v1.HostPathSocket, path: file, wantErr: "is not a socket file"},
		{name: "CharDevice", typ: v1.HostPathCharDev, path: "/dev/null"},
		{name: "CharDevice on a file", typ: v1.HostPathCharDev, path: file, wantErr: "is not a character device"},
		{name: "BlockDevice on a char device", typ: v1.HostPathBlockDev, path: "/dev/null", wantErr: "is not a block device"},
		{name: "BlockDevice", typ: v1.HostPathBlockDev, path: blockDev},
		{name: "invalid type", typ: "Pipe", path: dir, wantErr: `invalid hostPath type "Pipe"`},
		{name: "relative path", typ: v1.HostPathUnset, path: "var/log", wantErr: "not absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.path == "" {
				prereq.Missing(t, "root (to create a block device)")
			}
			p := testPod(t, v1.PodSpec{Volumes: []v1.Volume{{
				Name:         "vol",
				VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: tt.path, Type: hostPathType(tt.typ)}},
			}}})
			err := Setup(p)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Setup: %v", err)
				}
				if tt.check != nil {
					tt.check(t, tt.path)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), `volume "vol"`) {
				t.Fatalf("Setup error = %v, want one naming volume \"vol\" and containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestSetupReportsEveryBadVolume(t *testing.T) {
	p := testPod(t, v1.PodSpec{Volumes: []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{}}},
		{Name: "ok", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "huge", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumHugePages}}},
		{Name: "gone", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/nonexistent/podvisor", Type: hostPathType(v1.HostPathDirectory)}}},
	}})
	err := Setup(p)
	if err == nil {
		t.Fatal("Setup succeeded with bad volumes")
	}
	for _, want := range []string{
		`volume "cfg": nfs volumes are not supported`,
		`volume "huge": emptyDir medium HugePages is not supported`,
		`volume "gone": hostPath type check failed: /nonexistent/podvisor is not a directory`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Setup error %q lacks %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(p.Dir, "volumes/empty-dir/ok")); err != nil {
		t.Errorf("good volume not set up next to bad ones: %v", err)
	}
}

func TestEmptyDirSurvivesSetup(t *testing.T) {
	p := testPod(t, v1.PodSpec{Volumes: []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}})
	if err := Setup(p); err != nil {
		t.Fatal(err)
	}
	vol := filepath.Join(p.Dir, "volumes", "empty-dir", "data")
	fi, err := os.Stat(vol)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o777 {
		t.Errorf("emptyDir mode = %v, want 0777", fi.Mode().Perm())
	}
	if err := os.WriteFile(filepath.Join(vol, "keep"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Setup(p); err != nil { // podvisor restarted
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(vol, "keep")); got != "data" {
		t.Errorf("emptyDir content after second Setup = %q, want \"data\"", got)
	}
}

// A pod's directory is root's only, also when an older podvisor made it
// wider, and so are the parents Setup creates.
func TestSetupPrivateDir(t *testing.T) {
	fresh := testPod(t, v1.PodSpec{})
	old := testPod(t, v1.PodSpec{})
	if err := os.MkdirAll(old.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(old.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []Pod{fresh, old} {
		if err := Setup(p); err != nil {
			t.Fatal(err)
		}
		if got := permOf(t, p.Dir); got != 0o700 {
			t.Errorf("pod dir mode = %v, want 0700", got)
		}
	}
	if got := permOf(t, filepath.Dir(fresh.Dir)); got != 0o700 {
		t.Errorf("created parent mode = %v, want 0700", got)
	}
}

func permOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}
