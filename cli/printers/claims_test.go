package printers

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// get pvc prints kubectl's columns: the phase, the volume (the
// PersistentVolume, or the provisioned directory), capacity and short
// access modes once bound.
func TestLocalObjectsClaims(t *testing.T) {
	now := time.Unix(1000, 0)
	claim := func(name, volume, path string, bound bool) api.Object {
		c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
			Spec:   v1.PersistentVolumeClaimSpec{VolumeName: volume, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}},
			Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}}
		if bound {
			c.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: c.Spec.AccessModes,
				Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("8Mi")}}
		}
		if path != "" {
			c.Annotations = map[string]string{claimVolumePath: path}
		}
		return api.Object{Kind: "PersistentVolumeClaim", Namespace: "default", Name: name, PersistentVolumeClaim: c}
	}
	items := []api.Object{claim("data", "", "default_data", true), claim("onpv", "host-pv", "/srv", true), claim("wait", "", "", false)}
	var b bytes.Buffer
	if err := LocalObjects(&b, "PersistentVolumeClaim", items, false, Options{}, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := [][]string{
		{"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"},
		{"data", "Bound", "default_data", "8Mi", "RWOP", "<unset>", "60s"},
		{"onpv", "Bound", "host-pv", "8Mi", "RWOP", "<unset>", "60s"},
		{"wait", "Pending", "<unset>", "60s"},
	}
	if len(lines) != len(want) {
		t.Fatalf("got:\n%s", b.String())
	}
	for i, l := range lines {
		if got := strings.Fields(l); strings.Join(got, " ") != strings.Join(want[i], " ") {
			t.Errorf("line %d: %q, want %q", i, got, want[i])
		}
	}
}
