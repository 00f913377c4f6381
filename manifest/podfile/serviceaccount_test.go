package podfile

import (
	"errors"
	"slices"
	"testing"
)

// TestServiceAccount: a pod that names a service account is accepted, as
// kubelet accepts it, with one warning at the field that names it saying no
// token is mounted; automountServiceAccountToken: true joins that warning,
// false is quiet; the deprecated serviceAccount stands for
// serviceAccountName (Kubernetes' defaulting keeps the two the same).
func TestServiceAccount(t *testing.T) {
	const sa = `spec.serviceAccountName: service account "sa": no token is mounted (a static pod gets none, as under kubelet)`
	tests := []struct {
		name     string
		extra    string
		warnings []string
		line     int    // of the warning
		account  string // spec.serviceAccountName after defaulting
	}{
		{"name", "  serviceAccountName: sa\n", []string{sa}, 9, "sa"},
		{"deprecated alias", "  serviceAccount: sa\n",
			[]string{`spec.serviceAccount: service account "sa": no token is mounted (a static pod gets none, as under kubelet)`}, 9, "sa"},
		{"both, the name wins", "  serviceAccount: old\n  serviceAccountName: sa\n", []string{sa}, 10, "sa"},
		{"automount false is quiet", "  serviceAccountName: sa\n  automountServiceAccountToken: false\n", []string{sa}, 9, "sa"},
		{"automount true joins the one warning", "  automountServiceAccountToken: true\n  serviceAccountName: sa\n  serviceAccount: sa\n",
			[]string{sa + "; automountServiceAccountToken: true is ignored"}, 10, "sa"},
		{"automount true alone", "  automountServiceAccountToken: true\n",
			[]string{"spec.automountServiceAccountToken: ignored by podvisor (no token is ever mounted: a static pod gets none, as under kubelet)"}, 9, ""},
		{"automount false alone", "  automountServiceAccountToken: false\n", nil, 0, ""},
		{"none", "", nil, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "/m/sa.yaml", basePod+tt.extra)[0]
			if !slices.Equal(p.Warnings, tt.warnings) {
				t.Errorf("warnings\n got %q\nwant %q", p.Warnings, tt.warnings)
			}
			if len(tt.warnings) > 0 {
				if len(p.WarningErrors) != 1 || p.WarningErrors[0].Line != tt.line || !errors.Is(p.WarningErrors[0], ErrIgnored) {
					t.Errorf("warning errors %v, want one at line %d", p.WarningErrors, tt.line)
				}
			}
			spec := p.Pod.Spec
			if spec.ServiceAccountName != tt.account || spec.DeprecatedServiceAccount != tt.account {
				t.Errorf("serviceAccountName %q, serviceAccount %q; want both %q", spec.ServiceAccountName, spec.DeprecatedServiceAccount, tt.account)
			}
		})
	}
}
