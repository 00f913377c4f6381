package supervise

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// RuntimeClassNotFound is the error of a runtime class the node does not
// have, worded as kubelet's RuntimeClass manager words it (the NotFound
// error of the node.k8s.io RuntimeClass); hint, when set, says where the
// class would come from.
func RuntimeClassNotFound(name, hint string) error {
	err := fmt.Errorf("runtimeclasses.node.k8s.io %q not found", name)
	if hint != "" {
		err = fmt.Errorf("%w: %s", err, hint)
	}
	return err
}

// checkRuntimeClass resolves the pod's runtime class before its sandbox
// is made, as kubelet's createPodSandbox asks its RuntimeClass manager
// first: a class the node lacks fails the sandbox step, so the pod waits
// (ContainerCreating, a FailedCreatePodSandBox event, retried with
// back-off).
func (w *podWorker) checkRuntimeClass(pod *v1.Pod) error {
	name := pod.Spec.RuntimeClassName
	if name == nil || *name == "" {
		return nil
	}
	if w.d.runtimeClass == nil {
		return RuntimeClassNotFound(*name, "")
	}
	return w.d.runtimeClass(*name)
}
