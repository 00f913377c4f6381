package status

import v1 "k8s.io/api/core/v1"

// FindPods returns the pods a user means by name, the one rule the CLI and
// the local API share: the pods whose full name ("<name>-<node>") is name
// or, when there are none, those whose manifest name (ManifestNameAnnotation)
// is name. namespace "" means every namespace; otherwise only pods in it
// match. More than one result means the name is ambiguous there; the
// results point into pods, in its order.
func FindPods(pods []v1.Pod, name, namespace string) []*v1.Pod {
	if name == "" {
		return nil // every pod without the annotation has manifest name ""
	}
	for _, match := range []func(*v1.Pod) bool{
		func(p *v1.Pod) bool { return p.Name == name },
		func(p *v1.Pod) bool { return p.Annotations[ManifestNameAnnotation] == name },
	} {
		var found []*v1.Pod
		for i := range pods {
			p := &pods[i]
			if (namespace == "" || p.Namespace == namespace) && match(p) {
				found = append(found, p)
			}
		}
		if len(found) > 0 {
			return found
		}
	}
	return nil
}

// PodReady reports whether the pod's Ready condition is True: the one
// reading of "Ready" for the supervisor's wait-for gate, the rollout, the
// stuck line and the daemon.
func PodReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
