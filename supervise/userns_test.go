package supervise

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestReadUserNSRange(t *testing.T) {
	for _, tc := range []struct {
		name           string
		subuid, subgid string // "-": no file
		want           userNSRange
		err            string
	}{
		{name: "no files", subuid: "-", subgid: "-", want: defaultUserNSRange},
		{name: "no entry", subuid: "alice:100000:65536\n", subgid: "alice:100000:65536\n", want: defaultUserNSRange},
		{name: "entry", subuid: "alice:100000:65536\npodvisor:1048576:655360\n", subgid: "podvisor:1048576:655360\n", want: userNSRange{First: 1 << 20, Len: 10 << 16}},
		{name: "uid only", subuid: "podvisor:1048576:655360\n", subgid: "-", err: "exactly one entry"},
		{name: "two entries", subuid: "podvisor:1048576:65536\npodvisor:2097152:65536\n", subgid: "podvisor:1048576:65536\n", err: "exactly one entry"},
		{name: "mismatch", subuid: "podvisor:1048576:65536\n", subgid: "podvisor:2097152:65536\n", err: "mismatched subuids and subgids"},
		{name: "unaligned first", subuid: "podvisor:100000:65536\n", subgid: "podvisor:100000:65536\n", err: "not a multiple of 65536"},
		{name: "unaligned count", subuid: "podvisor:131072:100000\n", subgid: "podvisor:131072:100000\n", err: "not a multiple of 65536"},
		{name: "host root range", subuid: "podvisor:0:131072\n", subgid: "podvisor:0:131072\n", err: "must be at least 65536"},
		{name: "bad number", subuid: "podvisor:x:65536\n", subgid: "podvisor:65536:65536\n", err: "subuid:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name, content string) string {
				p := filepath.Join(dir, name)
				if content != "-" {
					if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return p
			}
			got, err := readUserNSRange(write("subuid", tc.subuid), write("subgid", tc.subgid))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestUsernsAllocator(t *testing.T) {
	a := newUsernsAllocator(userNSRange{First: 1 << 16, Len: 3 << 16}, nil)
	m1, err := a.allocate("a")
	if err != nil || m1 != (idMapping{HostID: 1 << 16, Size: 1 << 16}) {
		t.Fatalf("first pod: %+v, %v", m1, err)
	}
	if again, _ := a.allocate("a"); again != m1 {
		t.Fatalf("second allocation of one pod moved it: %+v then %+v", m1, again)
	}
	m2, err := a.allocate("b")
	if err != nil || m2.HostID != 2<<16 {
		t.Fatalf("second pod: %+v, %v", m2, err)
	}
	m3, _ := a.allocate("c")
	if _, err := a.allocate("d"); err == nil || !strings.Contains(err.Error(), "could not find an empty slot") {
		t.Fatalf("fourth pod in three ranges: %v", err)
	}
	a.release("b")
	m4, err := a.allocate("d")
	if err != nil || m4 != m2 {
		t.Fatalf("after a release: %+v, %v; want %+v", m4, err, m2)
	}
	for _, m := range []idMapping{m1, m3, m4} {
		if m.HostID%UserNSLength != 0 || m.Size != UserNSLength {
			t.Fatalf("range %+v", m)
		}
	}
}

// TestUsernsAllocatorRecord: ranges from pod records (a restarted
// podvisor) are never handed to another pod, and bad ones are reported.
func TestUsernsAllocatorRecord(t *testing.T) {
	a := newUsernsAllocator(userNSRange{First: 1 << 16, Len: 2 << 16}, nil)
	held := idMapping{HostID: 1 << 16, Size: 1 << 16}
	if err := a.record("old", held); err != nil {
		t.Fatal(err)
	}
	if m, _ := a.allocate("old"); m != held {
		t.Fatalf("recorded pod got %+v, want %+v", m, held)
	}
	if m, _ := a.allocate("new"); m.HostID != 2<<16 {
		t.Fatalf("new pod got %+v beside a recorded one", m)
	}
	for _, tc := range []struct {
		uid types.UID
		m   idMapping
		err string
	}{
		{"other", held, "already pod old's"},
		{"x", idMapping{HostID: 100000, Size: 1 << 16}, "not a range"},
		{"x", idMapping{HostID: 1 << 16, Size: 1000}, "not a range"},
		{"x", idMapping{HostID: 5 << 16, Size: 1 << 16}, "outside podvisor's IDs"},
	} {
		if err := a.record(tc.uid, tc.m); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("record %s %+v: %v, want %q", tc.uid, tc.m, err, tc.err)
		}
	}
}

func TestUsernsRefusal(t *testing.T) {
	plain := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	crun := "crun"
	vol := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		s    UserNSSupport
		want string
	}{
		{"supported", vol, UserNSSupport{}, ""},
		{"containerd 1.6", plain, UserNSSupport{Unsupported: "containerd 1.6.20 cannot"}, "can't set `spec.hostUsers: false`, runtime does not support user namespaces: containerd 1.6.20 cannot"},
		{"runtime class", &v1.Pod{Spec: v1.PodSpec{RuntimeClassName: &crun}}, UserNSSupport{Unsupported: "the OCI runtime does not list user namespaces"}, "can't set `spec.hostUsers: false`, RuntimeClass handler \"crun\" does not support user namespaces: the OCI runtime does not list user namespaces"},
		{"no idmap, no volume", plain, UserNSSupport{NoIDMapMounts: "runc 1.1.5 cannot"}, ""},
		{"no idmap, a volume", vol, UserNSSupport{NoIDMapMounts: "runc 1.1.5 cannot"}, "can't set `spec.hostUsers: false`, volume \"data\" of container \"c\" cannot be mounted in the pod's user namespace: runc 1.1.5 cannot"},
	} {
		if got := usernsRefusal(tc.pod, tc.s); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
