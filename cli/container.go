package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// allContainerNames lists a pod's containers as kubectl's
// podcmd.AllContainerNames does: the containers, then the ephemeral ones
// marked " (ephem)", then the init ones marked " (init)".
func allContainerNames(pod *v1.Pod) string {
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name+" (ephem)")
	}
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name+" (init)")
	}
	return strings.Join(names, ", ")
}

func hasContainer(pod *v1.Pod, name string) bool {
	in := func(c v1.Container) bool { return c.Name == name }
	return slices.ContainsFunc(pod.Spec.Containers, in) || slices.ContainsFunc(pod.Spec.InitContainers, in) ||
		slices.ContainsFunc(pod.Spec.EphemeralContainers, func(c v1.EphemeralContainer) bool { return c.Name == name })
}

// firstContainer is kubectl's last resort when no container is named:
// the first one, saying so on warn when the pod has others.
func firstContainer(pod *v1.Pod, warn io.Writer) (string, error) {
	if len(pod.Spec.Containers) == 0 {
		return "", fmt.Errorf("pod %s/%s does not have any containers", pod.Namespace, pod.Name)
	}
	name := pod.Spec.Containers[0].Name
	if len(pod.Spec.Containers) > 1 || len(pod.Spec.InitContainers) > 0 || len(pod.Spec.EphemeralContainers) > 0 {
		fmt.Fprintf(warn, "Defaulted container %q out of: %s\n", name, allContainerNames(pod))
	}
	return name, nil
}

// logsDefaultContainer is the container kubectl logs reads when none is
// named: the one the kubectl.kubernetes.io/default-container annotation
// names (one it does not find is a warning), else the first.
func logsDefaultContainer(pod *v1.Pod, warn io.Writer) (string, error) {
	if d := pod.Annotations[defaultContainerAnnotation]; d != "" {
		if hasContainer(pod, d) {
			return d, nil
		}
		fmt.Fprintf(warn, "Default container name %q not found in pod %s\n", d, pod.Name)
	}
	return firstContainer(pod, warn)
}

// streamDefaultContainer is the container kubectl exec and attach use
// when none is named (kubectl's podcmd.FindOrDefaultContainerByName): the
// annotation's, an error when it names none, else the first.
func streamDefaultContainer(pod *v1.Pod, warn io.Writer) (string, error) {
	if d := pod.Annotations[defaultContainerAnnotation]; d != "" {
		if !hasContainer(pod, d) {
			return "", fmt.Errorf("container %s is not valid for pod %s out of: %s", d, pod.Name, allContainerNames(pod))
		}
		return d, nil
	}
	return firstContainer(pod, warn)
}

// checkStreamContainer says, in the words podvisor has always used, when
// the pod has no container called name (exec and attach with -c).
func checkStreamContainer(pod *v1.Pod, name string) error {
	in := func(c v1.Container) bool { return c.Name == name }
	if slices.ContainsFunc(pod.Spec.Containers, in) || slices.ContainsFunc(pod.Spec.InitContainers, in) {
		return nil
	}
	var names, inits []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.InitContainers {
		inits = append(inits, c.Name)
	}
	msg := fmt.Sprintf("container %q is not valid for pod %s: choose one of: [%s]", name, pod.Name, strings.Join(names, " "))
	if len(inits) > 0 {
		msg += fmt.Sprintf(" or one of the init containers: [%s]", strings.Join(inits, " "))
	}
	return errors.New(msg)
}

// containerHasTTY tells whether the pod's container name allocates a
// terminal (tty: true).
func containerHasTTY(pod *v1.Pod, name string) bool {
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			if c.Name == name {
				return c.TTY
			}
		}
	}
	return false
}
