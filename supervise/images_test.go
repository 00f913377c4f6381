package supervise

import "testing"

func TestArchiveRefTranslator(t *testing.T) {
	tr := archiveRefTranslator("/var/lib/podvisor/images/busybox.tar")
	for in, want := range map[string]string{
		"busybox":                          "docker.io/library/busybox:latest",
		"busybox:1.36":                     "docker.io/library/busybox:1.36",
		"docker.io/library/busybox:latest": "docker.io/library/busybox:latest",
		"registry.local:5000/etcd:3.5":     "registry.local:5000/etcd:3.5",
		"latest":                           "docker.io/library/busybox:latest",
		"3.5.9":                            "docker.io/library/busybox:3.5.9",
		"v1.2":                             "docker.io/library/busybox:v1.2",
		"Not A Ref":                        "",
	} {
		if got := tr(in); got != want {
			t.Errorf("translate(%q) = %q, want %q", in, got, want)
		}
	}
}

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
