package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func exited(name string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}

func rules(policy v1.ContainerRestartPolicy, op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) v1.Container {
	return v1.Container{RestartPolicy: &policy, RestartPolicyRules: []v1.ContainerRestartRule{
		{Action: v1.ContainerRestartRuleActionRestart, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}},
	}}
}

// kubelet's TestContainerShouldRestart cases (pkg/api/v1/pod).
func TestContainerShouldRestart(t *testing.T) {
	never, always, onFailure := v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyOnFailure
	for _, tc := range []struct {
		name string
		pod  v1.RestartPolicy
		c    v1.Container
		code int32
		want bool
	}{
		{"pod Always", v1.RestartPolicyAlways, v1.Container{}, 0, true},
		{"pod OnFailure, 0", v1.RestartPolicyOnFailure, v1.Container{}, 0, false},
		{"pod OnFailure, 1", v1.RestartPolicyOnFailure, v1.Container{}, 1, true},
		{"pod Never", v1.RestartPolicyNever, v1.Container{}, 1, false},
		{"container Never in an Always pod", v1.RestartPolicyAlways, v1.Container{RestartPolicy: &never}, 1, false},
		{"container Always in a Never pod", v1.RestartPolicyNever, v1.Container{RestartPolicy: &always}, 0, true},
		{"container OnFailure, 0", v1.RestartPolicyAlways, v1.Container{RestartPolicy: &onFailure}, 0, false},
		{"rule In matches", v1.RestartPolicyNever, rules(never, v1.ContainerRestartRuleOnExitCodesOpIn, 42, 43), 43, true},
		{"rule In does not match: the container's policy", v1.RestartPolicyNever, rules(never, v1.ContainerRestartRuleOnExitCodesOpIn, 42), 1, false},
		{"rule NotIn matches", v1.RestartPolicyNever, rules(never, v1.ContainerRestartRuleOnExitCodesOpNotIn, 0), 2, true},
		{"rule NotIn does not match", v1.RestartPolicyAlways, rules(never, v1.ContainerRestartRuleOnExitCodesOpNotIn, 0), 0, false},
		{"rules without a container policy: the pod's", v1.RestartPolicyNever, v1.Container{RestartPolicyRules: rules(never, v1.ContainerRestartRuleOnExitCodesOpIn, 1).RestartPolicyRules}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ContainerShouldRestart(&v1.PodSpec{RestartPolicy: tc.pod}, &tc.c, tc.code); got != tc.want {
				t.Errorf("restart %v, want %v", got, tc.want)
			}
		})
	}
}

// With container restart rules a terminated pod is Running while one of
// its containers restarts, as kubelet's getPhase.
func TestPhaseContainerRestartRules(t *testing.T) {
	spec := podSpec(v1.RestartPolicyNever, nil, "a", "b")
	spec.Containers[0] = rules(v1.ContainerRestartPolicyNever, v1.ContainerRestartRuleOnExitCodesOpIn, 42)
	spec.Containers[0].Name = "a"
	runPhaseCases(t, spec, []phaseCase{
		{"a exited 42: restarts", nil, sts(exited("a", 42), exited("b", 0)), v1.PodRunning},
		{"a exited 1: not restarted, failed", nil, sts(exited("a", 1), exited("b", 0)), v1.PodFailed},
		{"all succeeded", nil, sts(exited("a", 0), exited("b", 0)), v1.PodSucceeded},
	})
	neverPolicy := v1.ContainerRestartPolicyNever
	spec = podSpec(v1.RestartPolicyAlways, nil, "a", "b")
	spec.Containers[1].RestartPolicy = &neverPolicy
	runPhaseCases(t, spec, []phaseCase{
		{"Always pod, the Never container done, the other restarting", nil, sts(exited("a", 1), exited("b", 0)), v1.PodRunning},
	})
	spec = podSpec(v1.RestartPolicyAlways, nil, "a")
	spec.Containers[0].RestartPolicy = &neverPolicy
	runPhaseCases(t, spec, []phaseCase{
		{"Always pod whose one container is Never: succeeded", nil, sts(exited("a", 0)), v1.PodSucceeded},
	})
}
