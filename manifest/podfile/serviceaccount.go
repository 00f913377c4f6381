package podfile

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// A static pod may name a service account: kubelet runs it, and mounts no
// token, because the token volume is added by the apiserver's ServiceAccount
// admission, which a static pod never passes. podvisor does the same and
// says so once per pod, in one warning for the three fields that ask for a
// service account or its token.

// serviceAccountFields are the PodSpec fields checkServiceAccount warns
// about, instead of the field table's generic rules.
var serviceAccountFields = map[string]bool{
	"serviceAccountName":           true,
	"serviceAccount":               true,
	"automountServiceAccountToken": true,
}

// checkServiceAccount adds at most one warning for a pod spec that names a
// service account (serviceAccountName, or the deprecated serviceAccount) or
// asks for its token (automountServiceAccountToken: true): no token is
// mounted. It is at the field that names the account (serviceAccountName,
// which wins over the alias when both are set, as Kubernetes' defaulting
// has it), else at automountServiceAccountToken, so its line points there.
// automountServiceAccountToken: false asks for what happens anyway, and is
// quiet.
func (c *supportChecker) checkServiceAccount(path string, spec *v1.PodSpec) {
	automount := spec.AutomountServiceAccountToken != nil && *spec.AutomountServiceAccountToken
	name, field := spec.ServiceAccountName, "serviceAccountName"
	if name == "" && spec.DeprecatedServiceAccount != "" {
		name, field = spec.DeprecatedServiceAccount, "serviceAccount"
	}
	switch {
	case name != "":
		msg := fmt.Sprintf("%s: service account %q: no token is mounted (a static pod gets none, as under kubelet)", joinField(path, field), name)
		if automount {
			msg += "; automountServiceAccountToken: true is ignored"
		}
		c.p.warn(msg)
	case automount:
		c.p.warn(ignoredWarning(joinField(path, "automountServiceAccountToken"), "no token is ever mounted: a static pod gets none, as under kubelet"))
	}
}
