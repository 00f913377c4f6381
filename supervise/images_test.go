package supervise

import "testing"

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
