package podfile

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/core"
	corev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
)

// ConfigMaps and Secrets are validated by Kubernetes' own ValidateConfigMap
// and ValidateSecret, as the apiserver runs them on create: the v1 object is
// defaulted, converted to the internal type and validated, and each error
// is given its field's line. podvisor adds one rule: a service account
// token Secret is refused, as static pods cannot use one.

// validateConfigMap runs ValidateConfigMap: the name, namespace and
// metadata, the keys of data and binaryData (valid, not in both), and the
// 1 MiB size limit.
func validateConfigMap(cm *v1.ConfigMap, p *problems) {
	var in core.ConfigMap
	if err := corev1.Convert_v1_ConfigMap_To_core_ConfigMap(cm, &in, nil); err != nil {
		p.invalid("", "convert to the internal ConfigMap type for validation: "+err.Error())
		return
	}
	addObjectErrors(corevalidation.ValidateConfigMap(&in), cm.Annotations, p)
}

// defaultSecret applies what the apiserver does before validation: type
// Opaque when unset (SetObjectDefaults_Secret), and stringData merged into
// data (stringData wins), as the conversion to the internal type does; the
// Secret handed out has data only.
func defaultSecret(s *v1.Secret) {
	corev1.SetObjectDefaults_Secret(s)
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
}

// validateSecret runs ValidateSecret: the name, namespace and metadata,
// the keys of data, the 1 MiB size limit, and the keys the well-known
// types need (tls.crt and tls.key, ssh-privatekey, .dockerconfigjson as
// JSON, ...). A service account token Secret is refused instead: static
// pods cannot use one.
func validateSecret(s *v1.Secret, p *problems) {
	if s.Type == v1.SecretTypeServiceAccountToken {
		p.invalid("type", notSupported("static pods cannot use service account tokens"))
		return
	}
	var in core.Secret
	if err := corev1.Convert_v1_Secret_To_core_Secret(s, &in, nil); err != nil {
		p.invalid("", "convert to the internal Secret type for validation: "+err.Error())
		return
	}
	addObjectErrors(corevalidation.ValidateSecret(&in), s.Annotations, p)
}

// addObjectErrors adds Kubernetes' errors in a stable order (labels,
// annotations and data are maps), each without its field, which the
// FileError carries.
func addObjectErrors(errs field.ErrorList, annotations map[string]string, p *problems) {
	slices.SortStableFunc(errs, func(a, b *field.Error) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.ErrorBody(), b.ErrorBody()))
	})
	for _, e := range errs {
		reason := errorReason(e)
		if (e.Field == "" || e.Field == "[]") && e.Type == field.ErrorTypeTooLong {
			// The size of data and binaryData together: point at data.
			p.invalid("data", reason)
			continue
		}
		if e.Field == "metadata.annotations" && e.Type == field.ErrorTypeTooLong {
			// Say by how much.
			if err := apivalidation.ValidateAnnotationsSize(annotations); err != nil {
				reason = err.Error()
			}
		}
		p.invalid(e.Field, reason)
	}
}
