package containerd

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podvisor/podvisor/supervise"
)

func i64(v int64) *int64 { return &v }

// The process identity of a container, resolved against the image's
// /etc/passwd and /etc/group (testPasswd, testGroup) as the CRI plugin
// does after kubelet: busybox-like images run as root, runAsUser keeps the
// user's group memberships, runAsGroup replaces the primary group without
// leaving the old one behind, supplementalGroups come last.
func TestIdentity(t *testing.T) {
	for _, tc := range []struct {
		name      string
		imageUser string
		pod       *v1.PodSecurityContext
		ctr       *v1.SecurityContext
		uid, gid  uint32
		groups    []uint32
	}{
		{name: "image without USER", uid: 0, gid: 0, groups: []uint32{0}},
		// The review's case: busybox with runAsUser/runAsGroup 1000 ran with
		// Groups: 0.
		{name: "runAsUser and runAsGroup unknown to the image",
			pod: &v1.PodSecurityContext{RunAsUser: i64(4000), RunAsGroup: i64(4000)}, uid: 4000, gid: 4000, groups: []uint32{4000}},
		{name: "runAsUser unknown to the image: gid 0 as the CRI",
			pod: &v1.PodSecurityContext{RunAsUser: i64(4000)}, uid: 4000, gid: 0, groups: []uint32{0}},
		{name: "runAsUser keeps the user's groups",
			pod: &v1.PodSecurityContext{RunAsUser: i64(1000)}, uid: 1000, gid: 1000, groups: []uint32{1000, 10, 50}},
		{name: "runAsGroup replaces the primary group",
			pod: &v1.PodSecurityContext{RunAsUser: i64(1000), RunAsGroup: i64(3000)}, uid: 1000, gid: 3000, groups: []uint32{3000, 10, 50}},
		{name: "supplementalGroups after the image's",
			pod: &v1.PodSecurityContext{RunAsUser: i64(1000), SupplementalGroups: []int64{4000, 10}}, uid: 1000, gid: 1000, groups: []uint32{1000, 10, 50, 4000}},
		{name: "container runAsUser over the pod's",
			pod: &v1.PodSecurityContext{RunAsUser: i64(4000)}, ctr: &v1.SecurityContext{RunAsUser: i64(1000)}, uid: 1000, gid: 1000, groups: []uint32{1000, 10, 50}},
		{name: "image USER by name", imageUser: "app", uid: 1000, gid: 1000, groups: []uint32{1000, 10, 50}},
		{name: "image USER name and runAsGroup",
			imageUser: "app", ctr: &v1.SecurityContext{RunAsGroup: i64(3000)}, uid: 1000, gid: 3000, groups: []uint32{3000, 10, 50}},
		{name: "image USER uid:gid kept", imageUser: "1000:50", uid: 1000, gid: 50, groups: []uint32{50, 10}},
		{name: "image USER uid:group name kept", imageUser: "1000:staff", uid: 1000, gid: 50, groups: []uint32{50, 10}},
		{name: "runAsUser drops the image's group as the CRI",
			imageUser: "1000:50", ctr: &v1.SecurityContext{RunAsUser: i64(65534)}, uid: 65534, gid: 65534, groups: []uint32{65534}},
		{name: "runAsGroup alone keeps the image's user",
			imageUser: "1000:50", ctr: &v1.SecurityContext{RunAsGroup: i64(7)}, uid: 1000, gid: 7, groups: []uint32{7, 10, 50}},
		{name: "runAsGroup alone without image USER: root",
			ctr: &v1.SecurityContext{RunAsGroup: i64(7)}, uid: 0, gid: 7, groups: []uint32{7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: tc.pod}}
			c := &v1.Container{Name: "c", Command: []string{"true"}, SecurityContext: tc.ctr}
			h := testHost(t)
			h.imageUser = fixedUser(tc.imageUser)
			opts, err := h.specOpts(supervise.ContainerConfig{Pod: pod, Container: c}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The kernel keeps groups sorted; their order in the spec is
			// no behaviour.
			u := applyOpts(t, opts).Process.User
			if u.UID != tc.uid || u.GID != tc.gid || !reflect.DeepEqual(slices.Sorted(slices.Values(u.AdditionalGids)), slices.Sorted(slices.Values(tc.groups))) {
				t.Errorf("uid %d gid %d groups %v, want uid %d gid %d groups %v", u.UID, u.GID, u.AdditionalGids, tc.uid, tc.gid, tc.groups)
			}
		})
	}
}

// runAsNonRoot as kubelet's verifyRunAsNonRoot decides it, with its
// messages: only a numeric, non-zero user passes.
func TestRunAsNonRoot(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-node", Namespace: "default", UID: "u1"}}
	c := &v1.Container{Name: "c"}
	for _, tc := range []struct {
		runAsUser *int64
		imageUser string
		want      string // "" passes
	}{
		{nil, "", `container has runAsNonRoot and image will run as root (pod: "p-node_default(u1)", container: c)`},
		{nil, "0", `container has runAsNonRoot and image will run as root (pod: "p-node_default(u1)", container: c)`},
		{nil, "0:1000", `container has runAsNonRoot and image will run as root (pod: "p-node_default(u1)", container: c)`},
		{nil, "app", `container has runAsNonRoot and image has non-numeric user (app), cannot verify user is non-root (pod: "p-node_default(u1)", container: c)`},
		{nil, "app:50", `container has runAsNonRoot and image has non-numeric user (app), cannot verify user is non-root (pod: "p-node_default(u1)", container: c)`},
		{nil, "1000", ""},
		{nil, "1000:0", ""},
		{i64(0), "1000", `container's runAsUser breaks non-root policy (pod: "p-node_default(u1)", container: c)`},
		{i64(1000), "app", ""},
		{i64(1000), "", ""},
	} {
		err := verifyRunAsNonRoot(pod, c, tc.runAsUser, tc.imageUser)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("runAsUser %v, image USER %q: got %q, want %q", tc.runAsUser, tc.imageUser, got, tc.want)
		}
	}
}

// runAsNonRoot is checked in the spec, against the image's USER rather than
// the uid a name resolves to; without it a named user runs.
func TestSpecRunAsNonRoot(t *testing.T) {
	tr := true
	for _, tc := range []struct {
		imageUser string
		nonRoot   bool
		wantErr   string
	}{
		{"app", true, "non-numeric user (app)"},
		{"app", false, ""},
		{"", true, "image will run as root"},
		{"1000", true, ""},
	} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
		c := &v1.Container{Name: "c", Command: []string{"true"}}
		if tc.nonRoot {
			c.SecurityContext = &v1.SecurityContext{RunAsNonRoot: &tr}
		}
		h := testHost(t)
		h.imageUser = fixedUser(tc.imageUser)
		opts, err := h.specOpts(supervise.ContainerConfig{Pod: pod, Container: c}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tryOpts(t, opts)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("image USER %q runAsNonRoot %v: %v", tc.imageUser, tc.nonRoot, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("image USER %q runAsNonRoot %v: error %v, want %q", tc.imageUser, tc.nonRoot, err, tc.wantErr)
		}
	}
}
