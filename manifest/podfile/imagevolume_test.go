package podfile

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestImageVolume: an image volume is accepted, its pullPolicy defaulted
// as Kubernetes defaults it (Always for :latest or no tag, else
// IfNotPresent); bindMountOptions on it and an empty reference are
// refused.
func TestImageVolume(t *testing.T) {
	pod := func(volume, mount string) string {
		return basePod + "    volumeMounts:\n    - name: data\n      mountPath: /data\n" + mount + "  volumes:\n  - name: data\n    image:\n" + volume
	}
	for _, tc := range []struct {
		volume string
		want   v1.PullPolicy
	}{
		{"      reference: registry.test/data:1\n", v1.PullIfNotPresent},
		{"      reference: registry.test/data\n", v1.PullAlways},
		{"      reference: registry.test/data:latest\n", v1.PullAlways},
		{"      reference: registry.test/data:1\n      pullPolicy: Never\n", v1.PullNever},
	} {
		pods := mustParse(t, "/m/p.yaml", pod(tc.volume, ""))
		if got := pods[0].Pod.Spec.Volumes[0].Image.PullPolicy; got != tc.want {
			t.Errorf("%q: pullPolicy %s, want %s", tc.volume, got, tc.want)
		}
	}
	for _, tc := range []struct{ volume, mount, want string }{
		{"      reference: registry.test/data:1\n", "      bindMountOptions: [noexec]\n", "volumeMounts[0].bindMountOptions"},
		{"      reference: \"\"\n", "", "spec.volumes[0].image.reference"},
	} {
		_, errs := parseDefault("/m/p.yaml", []byte(pod(tc.volume, tc.mount)), node)
		if got := joinErrs(errs); !strings.Contains(got, tc.want) {
			t.Errorf("%q %q: errors %q, want %q", tc.volume, tc.mount, got, tc.want)
		}
	}
}
