package containerd

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podvisor/podvisor/supervise"
)

// The AppArmor profile as containerd's CRI plugin chooses it, on a host
// with AppArmor and on one without (this test host's kind: the "enabled"
// flag is injected).
func TestDecideAppArmor(t *testing.T) {
	name := func(s string) *string { return &s }
	loaded := func(p string) (bool, error) { return p == "k8s-nginx", nil }
	runtimeDefault := &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
	unconfined := &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
	localhost := func(p string) *v1.AppArmorProfile {
		return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: name(p)}
	}
	for _, tc := range []struct {
		name       string
		profile    *v1.AppArmorProfile
		privileged bool
		enabled    bool
		want       appArmorChoice
		wantErr    string
	}{
		{name: "enabled, none set: the default", enabled: true, want: appArmorChoice{defaultAppArmorProfile, true}},
		{name: "enabled, none set, privileged: none", enabled: true, privileged: true},
		{name: "enabled, RuntimeDefault", profile: runtimeDefault, enabled: true, want: appArmorChoice{defaultAppArmorProfile, true}},
		{name: "enabled, RuntimeDefault, privileged: none", profile: runtimeDefault, privileged: true, enabled: true},
		{name: "enabled, Unconfined", profile: unconfined, enabled: true},
		{name: "enabled, Localhost loaded", profile: localhost("k8s-nginx"), enabled: true, want: appArmorChoice{Profile: "k8s-nginx"}},
		{name: "enabled, Localhost with the old prefix", profile: localhost("localhost/k8s-nginx"), enabled: true, want: appArmorChoice{Profile: "k8s-nginx"}},
		{name: "enabled, Localhost privileged still confined", profile: localhost("k8s-nginx"), privileged: true, enabled: true, want: appArmorChoice{Profile: "k8s-nginx"}},
		{name: "enabled, Localhost not loaded", profile: localhost("missing"), enabled: true, wantErr: "apparmor profile not found missing"},
		{name: "enabled, Localhost without a name", profile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost}, enabled: true, wantErr: "needs localhostProfile"},
		{name: "disabled, none set: none"},
		{name: "disabled, RuntimeDefault: a no-op", profile: runtimeDefault},
		{name: "disabled, Unconfined", profile: unconfined},
		{name: "disabled, Localhost: an error", profile: localhost("k8s-nginx"), wantErr: "AppArmor is not enabled on this host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decideAppArmor(tc.profile, tc.privileged, tc.enabled, loaded)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case got != tc.want:
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A Localhost profile ends up in the spec; a failed lookup of the loaded
// profiles fails the container instead of running it unconfined.
func TestSpecAppArmor(t *testing.T) {
	p := "k8s-nginx"
	c := &v1.Container{Name: "c", Command: []string{"true"}, SecurityContext: &v1.SecurityContext{
		AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &p},
	}}
	h := testHost(t)
	h.appArmor = true
	h.appArmorLoaded = func(n string) (bool, error) { return n == p, nil }
	opts, err := h.specOpts(supervise.ContainerConfig{Pod: &v1.Pod{}, Container: c}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := applyOpts(t, opts).Process.ApparmorProfile; got != p {
		t.Errorf("apparmor profile %q, want %q", got, p)
	}
	h.appArmorLoaded = func(string) (bool, error) { return false, errors.New("permission denied") }
	if _, err := h.specOpts(supervise.ContainerConfig{Pod: &v1.Pod{}, Container: c}, nil, nil); err == nil {
		t.Error("a profile that could not be looked up was accepted")
	}
}
