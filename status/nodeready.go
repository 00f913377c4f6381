package status

import (
	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Kubelet's reasons for the node's Ready condition, which tools and
// controllers read; the messages name podvisor.
const (
	NodeReasonReady    = "KubeletReady"
	NodeReasonNotReady = "KubeletNotReady"
	NodeMessageReady   = "podvisor is posting ready status"
)

// NodeReady is the node's Ready condition: the one builder behind the
// mirrored Node and GET /node, so the two never disagree. It follows
// kubelet's ReadyCondition setter (pkg/kubelet/nodestatus/setters.go):
// True with KubeletReady while health is nil; else False with
// KubeletNotReady and health's text as the message. Pressure is no input:
// kubelet reports it in its own conditions and leaves Ready alone. The
// heartbeat and transition times are the caller's to set.
func NodeReady(health error) v1.NodeCondition {
	if health != nil {
		return v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: NodeReasonNotReady, Message: health.Error()}
	}
	return v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: NodeReasonReady, Message: NodeMessageReady}
}

// NodeHealth joins the errors that make the node NotReady as kubelet
// does (its runtime's, its network's, ... its shutdown manager's, in that
// order): nil when all are nil, the one error's text when one is set, and
// "[a, b]" when several are. errors.Is finds each of them.
func NodeHealth(errs ...error) error {
	if agg := utilerrors.NewAggregate(errs); agg != nil {
		return agg
	}
	return nil
}
