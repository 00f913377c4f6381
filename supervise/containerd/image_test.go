package containerd

import "testing"

// A pod's image is named as docker names it (carried over from supervise's
// images_test.go when the runtime moved here).
func TestNormalizeImage(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":             "docker.io/library/busybox:latest",
		"busybox:1.36":        "docker.io/library/busybox:1.36",
		"k8s.gcr.io/etcd:3.5": "k8s.gcr.io/etcd:3.5",
	} {
		got, err := normalizeImage(in)
		if err != nil || got != want {
			t.Errorf("normalizeImage(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := normalizeImage("busybox:bad tag"); err == nil {
		t.Error("normalizeImage accepted an invalid name")
	}
}

func TestRepoDigest(t *testing.T) {
	if got := repoDigest("docker.io/library/busybox:latest", "sha256:abc"); got != "docker.io/library/busybox@sha256:abc" {
		t.Errorf("repoDigest = %q", got)
	}
	if got := repoDigest("Not A Ref", "sha256:abc"); got != "sha256:abc" {
		t.Errorf("repoDigest of a bad ref = %q", got)
	}
}
