package status

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The node's Ready condition as kubelet's setter builds it, from the
// errors joined as kubelet joins them.
func TestNodeReady(t *testing.T) {
	runtime := errors.New("containerd is not reachable")
	shutdown := errors.New("node is shutting down")
	for _, tc := range []struct {
		errs            []error
		status          v1.ConditionStatus
		reason, message string
	}{
		{nil, v1.ConditionTrue, NodeReasonReady, NodeMessageReady},
		{[]error{nil, nil}, v1.ConditionTrue, NodeReasonReady, NodeMessageReady},
		{[]error{nil, shutdown}, v1.ConditionFalse, NodeReasonNotReady, "node is shutting down"},
		{[]error{runtime, shutdown}, v1.ConditionFalse, NodeReasonNotReady, "[containerd is not reachable, node is shutting down]"},
	} {
		health := NodeHealth(tc.errs...)
		c := NodeReady(health)
		if c.Type != v1.NodeReady || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message {
			t.Errorf("%v: %+v, want %s/%s %q", tc.errs, c, tc.status, tc.reason, tc.message)
		}
		for _, err := range tc.errs {
			if err != nil && !errors.Is(health, err) {
				t.Errorf("%v: errors.Is(%v, %v) = false", tc.errs, health, err)
			}
		}
	}
}
