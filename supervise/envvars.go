package supervise

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/podvisor/podvisor/internal/expand"
	"github.com/podvisor/podvisor/manifest/podfile"
	v1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/kubernetes/pkg/api/v1/resource"
	"k8s.io/kubernetes/pkg/fieldpath"
)

// Objects are the local ConfigMaps and Secrets a pod's containers read
// their environment from, keyed "namespace/name" as in manifest.Snapshot.
// They are never mutated.
type Objects struct {
	ConfigMaps map[string]*v1.ConfigMap
	Secrets    map[string]*v1.Secret
	// Claims are the PersistentVolumeClaims' bindings (pvc.go).
	Claims map[string]podfile.ClaimBinding
}

// envFacts are what fieldRef and resourceFieldRef resolve from beyond the
// pod: its IPs, the node's, and the node's allocatable resources, which an
// unset limit resolves to (kubelet's defaultPodLimitsForDownwardAPI): the
// host's CPUs and memory, the state dir's filesystem as ephemeral storage.
type envFacts struct {
	PodIPs      []string
	HostIPs     []string
	Allocatable v1.ResourceList
	// EmptyDir gives an emptyDir volume's host directory, for fileKeyRef
	// (envfiles.go); nil where there is none.
	EmptyDir func(name string) string
}

// containerEnv is a container's resolved environment.
type containerEnv struct {
	// Env is the KEY=VALUE list, each name once, in the order first
	// defined (envFrom, then env).
	Env []string
	// Skipped are the messages of InvalidEnvironmentVariableNames events:
	// envFrom keys that, with their prefix, are not valid names (printable
	// ASCII but "="; the relaxed rule Kubernetes validates env names with
	// since 1.34). Older kubelets skipped keys failing the C identifier
	// rule with this event; kubelet 1.37 no longer checks, and a key the
	// apiserver's ConfigMap and Secret validation accepts always passes,
	// so this only guards objects that bypassed it. They name keys, never
	// values.
	Skipped []string
}

// configMapNotFound and the others are kubelet's messages (the apiserver's
// NotFound, makeEnvironmentVariables). They name objects and keys, never
// values.
func configMapNotFound(name string) error { return fmt.Errorf("configmap %q not found", name) }
func secretNotFound(name string) error    { return fmt.Errorf("secret %q not found", name) }

// envSource looks objects up in the pod's namespace.
type envSource struct {
	ns   string
	objs Objects
}

func (s envSource) configMap(name string) *v1.ConfigMap { return s.objs.ConfigMaps[s.ns+"/"+name] }
func (s envSource) secret(name string) *v1.Secret       { return s.objs.Secrets[s.ns+"/"+name] }

// envConfigError returns kubelet's error for the first ConfigMap, Secret or
// key the container's environment needs that is missing, nil when none is:
// such a container waits in CreateContainerConfigError. Optional ones do
// not count.
func envConfigError(pod *v1.Pod, c *v1.Container, objs Objects) error {
	src := envSource{ns: pod.Namespace, objs: objs}
	for _, ef := range c.EnvFrom {
		if r := ef.ConfigMapRef; r != nil && !isOptional(r.Optional) && src.configMap(r.Name) == nil {
			return configMapNotFound(r.Name)
		}
		if r := ef.SecretRef; r != nil && !isOptional(r.Optional) && src.secret(r.Name) == nil {
			return secretNotFound(r.Name)
		}
	}
	for _, e := range c.Env {
		if e.Value != "" || e.ValueFrom == nil {
			continue
		}
		if _, _, err := src.keyRef(e.ValueFrom); err != nil {
			return err
		}
	}
	return nil
}

func isOptional(b *bool) bool { return b != nil && *b }

// keyRef resolves a configMapKeyRef or secretKeyRef: the value, whether it
// is set (false: optional and missing, the variable is left out), or
// kubelet's error. Other sources report set=false, no error.
func (s envSource) keyRef(vf *v1.EnvVarSource) (string, bool, error) {
	switch {
	case vf.ConfigMapKeyRef != nil:
		r := vf.ConfigMapKeyRef
		cm := s.configMap(r.Name)
		if cm == nil {
			if isOptional(r.Optional) {
				return "", false, nil
			}
			return "", false, configMapNotFound(r.Name)
		}
		v, ok := cm.Data[r.Key]
		if !ok {
			if isOptional(r.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("couldn't find key %v in ConfigMap %v/%v", r.Key, s.ns, r.Name)
		}
		return v, true, nil
	case vf.SecretKeyRef != nil:
		r := vf.SecretKeyRef
		sec := s.secret(r.Name)
		if sec == nil {
			if isOptional(r.Optional) {
				return "", false, nil
			}
			return "", false, secretNotFound(r.Name)
		}
		v, ok := sec.Data[r.Key]
		if !ok {
			if isOptional(r.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("couldn't find key %v in Secret %v/%v", r.Key, s.ns, r.Name)
		}
		return string(v), true, nil
	}
	return "", false, nil
}

// resolveEnv builds a container's environment as kubelet's
// makeEnvironmentVariables: envFrom first (a later source overrides an
// earlier one), then env, each value expanding $(VAR) references to what is
// defined before it; an env entry overrides an envFrom key. Values from
// sources are never expanded.
func resolveEnv(pod *v1.Pod, c *v1.Container, objs Objects, f envFacts) (containerEnv, error) {
	src := envSource{ns: pod.Namespace, objs: objs}
	var out containerEnv
	var order []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	addAll := func(kind, name, prefix string, keys []string, value func(string) string) {
		var invalid []string
		for _, k := range keys {
			k2 := prefix + k
			if len(utilvalidation.IsRelaxedEnvVarName(k2)) != 0 {
				invalid = append(invalid, k2)
				continue
			}
			set(k2, value(k))
		}
		if len(invalid) > 0 {
			slices.Sort(invalid)
			out.Skipped = append(out.Skipped, fmt.Sprintf("Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.", strings.Join(invalid, ", "), kind, pod.Namespace, name))
		}
	}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			r := ef.ConfigMapRef
			cm := src.configMap(r.Name)
			if cm == nil {
				if isOptional(r.Optional) {
					continue
				}
				return containerEnv{}, configMapNotFound(r.Name)
			}
			addAll("configMap", r.Name, ef.Prefix, slices.Sorted(maps.Keys(cm.Data)), func(k string) string { return cm.Data[k] })
		case ef.SecretRef != nil:
			r := ef.SecretRef
			sec := src.secret(r.Name)
			if sec == nil {
				if isOptional(r.Optional) {
					continue
				}
				return containerEnv{}, secretNotFound(r.Name)
			}
			addAll("secret", r.Name, ef.Prefix, slices.Sorted(maps.Keys(sec.Data)), func(k string) string { return string(sec.Data[k]) })
		}
	}
	lookup := func(k string) (string, bool) { v, ok := vals[k]; return v, ok }
	for _, e := range c.Env {
		v := e.Value
		switch {
		case v != "":
			v = expand.Vars(v, lookup)
		case e.ValueFrom == nil:
		case e.ValueFrom.FieldRef != nil:
			var err error
			if v, err = fieldRefValue(e.ValueFrom.FieldRef.FieldPath, pod, f); err != nil {
				return containerEnv{}, err
			}
		case e.ValueFrom.ResourceFieldRef != nil:
			var err error
			if v, err = resourceFieldValue(e.ValueFrom.ResourceFieldRef, pod, c, f.Allocatable); err != nil {
				return containerEnv{}, err
			}
		case e.ValueFrom.FileKeyRef != nil:
			val, ok, err := fileKeyValue(pod, e.ValueFrom.FileKeyRef, f.EmptyDir)
			if err != nil {
				return containerEnv{}, err
			}
			if !ok {
				continue // optional and missing or empty: left out, as kubelet
			}
			v = val
		default:
			val, ok, err := src.keyRef(e.ValueFrom)
			if err != nil {
				return containerEnv{}, err
			}
			if !ok {
				continue // optional and missing: left out, as kubelet
			}
			v = val
		}
		set(e.Name, v)
	}
	for _, k := range order {
		out.Env = append(out.Env, k+"="+vals[k])
	}
	return out, nil
}

// fieldRefValue is kubelet's podFieldSelectorRuntimeValue: the node's and
// the pod's addresses from facts, the rest from the pod.
func fieldRefValue(path string, pod *v1.Pod, f envFacts) (string, error) {
	switch path {
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		if len(f.HostIPs) == 0 {
			return "", fmt.Errorf("the node has no IP address for %s", path)
		}
		return f.HostIPs[0], nil
	case "status.hostIPs":
		if len(f.HostIPs) == 0 {
			return "", fmt.Errorf("the node has no IP address for %s", path)
		}
		return strings.Join(f.HostIPs, ","), nil
	case "status.podIP":
		if len(f.PodIPs) == 0 {
			return "", nil
		}
		return f.PodIPs[0], nil
	case "status.podIPs":
		return strings.Join(f.PodIPs, ","), nil
	}
	return fieldpath.ExtractFieldPathAsString(pod, path)
}

// resourceFieldValue is kubelet's containerResourceRuntimeValue on the
// container with unset limits defaulted to the pod-level limits, else the
// node's allocatable (kubelet's defaultPodLimitsForDownwardAPI); the
// value is divided by the divisor and rounded up. c is the container whose
// env it is; nil for a downward API volume, where containerName names it.
func resourceFieldValue(fs *v1.ResourceFieldSelector, pod *v1.Pod, c *v1.Container, allocatable v1.ResourceList) (string, error) {
	ctr := c
	if fs.ContainerName != "" && (c == nil || fs.ContainerName != c.Name) {
		ctr = nil
		for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range list {
				if list[i].Name == fs.ContainerName {
					ctr = &list[i]
				}
			}
		}
	}
	if ctr == nil {
		return "", fmt.Errorf("container %s not found", fs.ContainerName)
	}
	dc := ctr.DeepCopy()
	resource.MergeContainerResourceLimits(dc, downwardAllocatable(pod, allocatable))
	return resource.ExtractContainerResourceValue(fs, dc)
}
