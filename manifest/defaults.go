package manifest

import (
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Default values, as in k8s.io/kubernetes pkg/apis/core/v1/defaults.go.
const (
	defaultTerminationGracePeriodSeconds int64 = 30 // v1.DefaultTerminationGracePeriodSeconds
	defaultTerminationMessagePath              = v1.TerminationMessagePathDefault
)

// setDefaults applies Kubernetes' defaulting (k8s.io/kubernetes
// pkg/apis/core/v1/defaults.go) for the fields podvisor implements. Defaults
// of rejected fields (probes, ephemeral containers, ...) are not applied:
// those fields never reach this point. The UID is computed before this runs,
// so changing a default here never changes a pod's identity.
func setDefaults(pod *v1.Pod) {
	spec := &pod.Spec

	// SetDefaults_PodSpec.
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &v1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		g := defaultTerminationGracePeriodSeconds
		spec.TerminationGracePeriodSeconds = &g
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = v1.DefaultSchedulerName
	}

	// SetDefaults_Pod.
	if spec.EnableServiceLinks == nil {
		t := v1.DefaultEnableServiceLinks
		spec.EnableServiceLinks = &t
	}
	for _, ctrs := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range ctrs {
			c := &ctrs[i]
			defaultRequestsFromLimits(c)
			// SetDefaults_Pod (defaultHostNetworkPorts): with hostNetwork
			// the container port is the host port.
			if spec.HostNetwork {
				for j := range c.Ports {
					if c.Ports[j].HostPort == 0 {
						c.Ports[j].HostPort = c.Ports[j].ContainerPort
					}
				}
			}
			setContainerDefaults(c)
		}
	}

	for i := range spec.Volumes {
		vol := &spec.Volumes[i]
		// SetDefaults_Volume: a volume with no source is an emptyDir.
		if allPointersNil(reflect.ValueOf(&vol.VolumeSource).Elem()) {
			vol.VolumeSource = v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}
		}
		// SetDefaults_HostPathVolumeSource.
		if vol.HostPath != nil && vol.HostPath.Type == nil {
			t := v1.HostPathUnset
			vol.HostPath.Type = &t
		}
		// EmptyDirVolumeSource: medium "" (StorageMediumDefault) needs no
		// defaulting; it is the zero value.
	}
}

// defaultRequestsFromLimits: SetDefaults_Pod copies a limit into the request
// of the same resource when the request is not set.
func defaultRequestsFromLimits(c *v1.Container) {
	if c.Resources.Limits == nil {
		return
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = v1.ResourceList{}
	}
	for name, q := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			c.Resources.Requests[name] = q.DeepCopy()
		}
	}
}

// setContainerDefaults: SetDefaults_Container and SetDefaults_ContainerPort.
func setContainerDefaults(c *v1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = defaultTerminationMessagePath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
	}
}

// defaultPullPolicy is Always for ":latest" and for images with neither tag
// nor digest (which mean latest), IfNotPresent otherwise, as
// SetDefaults_Container does with parsers.ParseImageName.
func defaultPullPolicy(image string) v1.PullPolicy {
	tag, digest := imageTag(image)
	if tag == "latest" || (tag == "" && !digest) {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// imageTag returns the tag of an image reference and whether it carries a
// digest. A colon before the last slash belongs to a registry host:port.
func imageTag(image string) (tag string, digest bool) {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		digest = true
		image = image[:i]
	}
	last := image[strings.LastIndexByte(image, '/')+1:]
	if i := strings.LastIndexByte(last, ':'); i >= 0 {
		tag = last[i+1:]
	}
	return tag, digest
}

// allPointersNil reports whether every field of struct v is a nil pointer
// (utilpointer.AllPtrFieldsNil in Kubernetes).
func allPointersNil(v reflect.Value) bool {
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			return false
		}
	}
	return true
}
