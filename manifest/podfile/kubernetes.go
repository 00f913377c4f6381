package podfile

import (
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	corev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/capabilities"
)

// Kubernetes' own defaulting and validation, run as kubelet's file source
// runs them (pkg/kubelet/config/common.go tryDecodeSinglePod): the v1 Pod
// is defaulted, its identity applied (name "<name>-<node>", namespace
// "default"), converted to the internal core.Pod and checked by
// ValidatePodCreate with the options kubelet derives from the pod. The
// generated functions are called directly, so no runtime.Scheme (and not
// legacyscheme's global one) is involved.

// setDefaults applies Kubernetes' defaulting for a v1.Pod
// (SetObjectDefaults_Pod: the pod, its spec, containers, ports, probes,
// lifecycle handlers, volumes). The UID is computed before this runs, so a
// change of defaults never changes a pod's identity.
func setDefaults(pod *v1.Pod) {
	corev1.SetObjectDefaults_Pod(pod)
}

// validateKubernetes runs ValidatePodCreate on the defaulted pod, whose
// identity is applied, and adds each error with its field path. Errors at
// or below a path in skip (fields the field table already rejected, a
// missing name) are dropped: they would say the same thing twice.
func validateKubernetes(pod *v1.Pod, skip []string, p *problems) {
	// kubelet allows privileged containers (cmd/kubelet/app/server.go);
	// validation reads this process-wide setting, which is set only once.
	capabilities.Initialize(capabilities.Capabilities{AllowPrivileged: true})
	var in core.Pod
	if err := corev1.Convert_v1_Pod_To_core_Pod(pod, &in, nil); err != nil {
		p.invalid("", "convert to the internal pod type for validation: "+err.Error())
		return
	}
	opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&in.Spec, nil, &in.ObjectMeta, nil)
	for _, e := range corevalidation.ValidatePodCreate(&in, opts) {
		if under(e.Field, skip) {
			continue
		}
		reason := errorReason(e)
		if e.Field == "metadata.annotations" && e.Type == field.ErrorTypeTooLong {
			// Say by how much.
			if err := apivalidation.ValidateAnnotationsSize(pod.Annotations); err != nil {
				reason = err.Error()
			}
		}
		value, _ := e.BadValue.(string)
		p.errs = append(p.errs, fieldErr{field: e.Field, reason: reason, value: value})
	}
}

// errorReason is the error without its field: "Invalid value: 81: must
// match ...". A bad value that is not a scalar is left out: it is an
// internal type, which would print with Go field names ("Privileged":true)
// rather than the manifest's, and the field path already says where it is.
func errorReason(e *field.Error) string {
	c := *e
	switch q := e.BadValue.(type) {
	case resource.Quantity:
		c.BadValue = q.String()
		return c.ErrorBody()
	case *resource.Quantity:
		c.BadValue = q.String()
		return c.ErrorBody()
	}
	v := reflect.ValueOf(e.BadValue)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		c.BadValue = v.String() // a named string type (core.Protocol) prints quoted too
	case reflect.Bool:
		c.BadValue = v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		c.BadValue = v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		c.BadValue = int64(v.Uint())
	case reflect.Float32, reflect.Float64:
		c.BadValue = v.Float()
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.String && v.Type().Elem().PkgPath() == "" {
			return c.ErrorBody() // a []string prints as JSON
		}
		c.BadValue = field.OmitValueType{}
	default:
		c.BadValue = field.OmitValueType{}
	}
	return c.ErrorBody()
}

// under reports whether path is one of roots or a field or item below one.
func under(path string, roots []string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, r+".") || strings.HasPrefix(path, r+"[") {
			return true
		}
	}
	return false
}
