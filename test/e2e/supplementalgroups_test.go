package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/test/testimage"
)

// TestSupplementalGroupsPolicy proves supplementalGroupsPolicy as kubelet
// with containerd's CRI gives it, on every containerd podvisor runs on
// (podvisor sets the process's groups itself): with Merge, and by
// default, the groups the image's /etc/group gives the user (wheel 10,
// staff 50) join runAsGroup and supplementalGroups; with Strict they do
// not. The groups are read from the container's own process, and the
// container's status reports them (containerStatuses[].user.linux).
func TestSupplementalGroupsPolicy(t *testing.T) {
	d := newDaemon(t)
	passwd, group := filepath.Join(d.dir, "passwd"), filepath.Join(d.dir, "group")
	if err := os.WriteFile(passwd, []byte(secPasswd), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(group, []byte(secGroup), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := testimage.Build(filepath.Join(d.images, "ident.tar"), testimage.Options{
		Ref: secIdentRef, ExtraFiles: map[string]string{"/etc/passwd": passwd, "/etc/group": group},
	}); err != nil {
		t.Fatal(err)
	}
	d.start()

	for _, tc := range []struct{ name, policy string }{{"merge", "Merge"}, {"default", ""}, {"strict", "Strict"}} {
		policy := ""
		if tc.policy != "" {
			policy = "    supplementalGroupsPolicy: " + tc.policy + "\n"
		}
		d.writeManifest(tc.name+".yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: groups-%s}
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    runAsUser: 1000
    runAsGroup: 3000
    supplementalGroups: [4000]
%s  containers:
  - {name: main, image: ident, imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
`, tc.name, policy))
	}
	for _, tc := range []struct {
		name, groups, id string
		status           []int64
	}{
		{"merge", "10 50 3000 4000", "uid=1000(app) gid=3000 groups=10(wheel),50(staff),3000,4000\n", []int64{10, 50, 3000, 4000}},
		{"default", "10 50 3000 4000", "uid=1000(app) gid=3000 groups=10(wheel),50(staff),3000,4000\n", []int64{10, 50, 3000, 4000}},
		{"strict", "3000 4000", "uid=1000(app) gid=3000 groups=3000,4000\n", []int64{3000, 4000}},
	} {
		pod := "groups-" + tc.name + "-" + node
		p := d.waitPod(pod, 90*time.Second, "running", running)
		// The status says who the process is, as kubelet's does.
		if u := containerStatus(p, "main").User; u == nil || u.Linux == nil || u.Linux.UID != 1000 || u.Linux.GID != 3000 ||
			!slices.Equal(slices.Sorted(slices.Values(u.Linux.SupplementalGroups)), tc.status) {
			t.Errorf("%s: containerStatuses[main].user = %+v, want uid 1000 gid 3000 supplementalGroups %v", pod, u, tc.status)
		}
		// The container's own process, as the runtime started it.
		d.poll(pod+": Groups of its process", 20*time.Second, func() (bool, string) {
			out, errOut, code := d.runCLI("", "exec", pod, "--", "sh", "-c", `sed -n 's/^Groups:\t*//p' /proc/1/status`)
			got := strings.TrimSpace(out)
			return code == 0 && got == tc.groups, fmt.Sprintf("exit %d: %q %s (want %q)", code, got, errOut, tc.groups)
		})
		// And as id shows it.
		d.poll(pod+": id", 20*time.Second, func() (bool, string) {
			out, errOut, code := d.runCLI("", "exec", pod, "--", "id")
			return code == 0 && out == tc.id, fmt.Sprintf("exit %d: %q %s (want %q)", code, out, errOut, tc.id)
		})
	}

	for _, f := range []string{"merge", "default", "strict"} {
		d.removeManifest(f + ".yaml")
	}
	for _, f := range []string{"merge", "default", "strict"} {
		d.waitGone("groups-"+f+"-"+node, 60*time.Second)
	}
}
