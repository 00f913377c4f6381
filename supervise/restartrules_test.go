package supervise

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// A container's restartPolicyRules and its own restartPolicy decide its
// restart in place of the pod's, and whether the pod has finished.
func TestPlanRestartRules(t *testing.T) {
	never := v1.ContainerRestartPolicyNever
	pod := testPod("p", v1.RestartPolicyNever, nil, "a", "b")
	pod.Spec.Containers[0].RestartPolicy = &never
	pod.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	for _, tc := range []struct {
		name string
		a    int32
		want []action
	}{
		{"exit 42 matches the rule: restarted", 42, []action{startContainer{Ref: app("a"), Restart: true}}},
		{"exit 1: the container's Never, the pod finished", 1, []action{releaseSandbox{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := live(nil, map[string]*containerRecord{"a": exitedRec(tc.a), "b": exitedRec(0)})
			p := planPod(planInput{Now: t0, Pod: pod, Rec: rec, Obs: map[string]observation{}, Probes: map[string]probeView{},
				Sandbox: readySandbox(), Waits: map[ctrRef]waits{}})
			if !reflect.DeepEqual(p.Actions, tc.want) {
				t.Errorf("actions %v, want %v", p.Actions, tc.want)
			}
		})
	}

	// An Always pod whose only container is Never has finished once it
	// exited.
	pod = testPod("q", v1.RestartPolicyAlways, nil, "a")
	pod.Spec.Containers[0].RestartPolicy = &never
	if !finishedPod(pod, live(nil, map[string]*containerRecord{"a": exitedRec(0)})) {
		t.Error("an Always pod whose Never container exited is not finished")
	}
}
