package images

import "testing"

func TestRefTranslator(t *testing.T) {
	tr := RefTranslator("/var/lib/podvisor/images/busybox.tar")
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

func TestLooksLikeTag(t *testing.T) {
	for in, want := range map[string]bool{
		"latest":     true,
		"3.5.9":      true,
		"v1.2":       true,
		"busybox":    false,
		"v":          false,
		"version":    false,
		"":           false,
		"busybox:1":  false,
		"library/x":  false,
		"x@sha256:0": false,
	} {
		if got := looksLikeTag(in); got != want {
			t.Errorf("looksLikeTag(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestIsArchive(t *testing.T) {
	for in, want := range map[string]bool{
		"busybox.tar":      true,
		".busybox.tar":     false,
		"busybox.tar.tmp":  false,
		"busybox.tar.gz":   false,
		"busybox":          false,
		".tar":             false,
		"etcd-3.5.9.tar":   true,
		"busybox.tar.part": false,
	} {
		if got := isArchive(in); got != want {
			t.Errorf("isArchive(%q) = %v, want %v", in, got, want)
		}
	}
}

// A pod's image is named as docker names it, the name Import gives.
func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":             "docker.io/library/busybox:latest",
		"busybox:1.36":        "docker.io/library/busybox:1.36",
		"k8s.gcr.io/etcd:3.5": "k8s.gcr.io/etcd:3.5",
	} {
		got, err := Normalize(in)
		if err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Normalize("busybox:bad tag"); err == nil {
		t.Error("Normalize accepted an invalid name")
	}
}
