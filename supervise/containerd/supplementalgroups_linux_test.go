package containerd

import (
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podvisor/podvisor/supervise"
)

// supplementalGroupsPolicy: Merge (the default) adds the groups the
// image's /etc/group gives the user; Strict keeps the primary group,
// fsGroup and supplementalGroups only, as containerd's CRI plugin does.
func TestSupplementalGroupsPolicy(t *testing.T) {
	merge, strict := v1.SupplementalGroupsPolicyMerge, v1.SupplementalGroupsPolicyStrict
	for _, tc := range []struct {
		name      string
		imageUser string
		pod       *v1.PodSecurityContext
		uid, gid  uint32
		groups    []uint32
	}{
		{name: "merge", pod: &v1.PodSecurityContext{RunAsUser: i64(1000), SupplementalGroupsPolicy: &merge, SupplementalGroups: []int64{4000}},
			uid: 1000, gid: 1000, groups: []uint32{1000, 10, 50, 4000}},
		{name: "strict", pod: &v1.PodSecurityContext{RunAsUser: i64(1000), SupplementalGroupsPolicy: &strict, SupplementalGroups: []int64{4000}},
			uid: 1000, gid: 1000, groups: []uint32{1000, 4000}},
		{name: "strict with runAsGroup and fsGroup", pod: &v1.PodSecurityContext{RunAsUser: i64(1000), RunAsGroup: i64(3000), FSGroup: i64(2000), SupplementalGroupsPolicy: &strict, SupplementalGroups: []int64{4000}},
			uid: 1000, gid: 3000, groups: []uint32{3000, 2000, 4000}},
		{name: "strict with the image's user", imageUser: "app", pod: &v1.PodSecurityContext{SupplementalGroupsPolicy: &strict},
			uid: 1000, gid: 1000, groups: []uint32{1000}},
		{name: "strict root drops root's image groups", pod: &v1.PodSecurityContext{SupplementalGroupsPolicy: &strict},
			uid: 0, gid: 0, groups: []uint32{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: tc.pod}}
			c := &v1.Container{Name: "c", Command: []string{"true"}}
			h := testHost(t)
			h.imageUser = fixedUser(tc.imageUser)
			opts, err := h.specOpts(supervise.ContainerConfig{Pod: pod, Container: c}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			u := applyOpts(t, opts).Process.User
			if u.UID != tc.uid || u.GID != tc.gid || !reflect.DeepEqual(slices.Sorted(slices.Values(u.AdditionalGids)), slices.Sorted(slices.Values(tc.groups))) {
				t.Errorf("uid %d gid %d groups %v, want uid %d gid %d groups %v", u.UID, u.GID, u.AdditionalGids, tc.uid, tc.gid, tc.groups)
			}
		})
	}
}
