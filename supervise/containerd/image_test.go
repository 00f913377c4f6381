package containerd

import "testing"

func TestRepoDigest(t *testing.T) {
	if got := repoDigest("docker.io/library/busybox:latest", "sha256:abc"); got != "docker.io/library/busybox@sha256:abc" {
		t.Errorf("repoDigest = %q", got)
	}
	if got := repoDigest("Not A Ref", "sha256:abc"); got != "sha256:abc" {
		t.Errorf("repoDigest of a bad ref = %q", got)
	}
}
