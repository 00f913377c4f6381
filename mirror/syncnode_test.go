package mirror

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SyncNode posts the Node's status at once, not at the next period: the
// node's shutdown reaches the apiserver before the pods are gone.
func TestSyncNodePostsAtOnce(t *testing.T) {
	var health atomic.Pointer[error]
	f := newFixture(t, func(o *Options) {
		o.Health = func() error {
			if e := health.Load(); e != nil {
				return *e
			}
			return nil
		}
	})
	s := f.session()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.nodeLoop(ctx) }()
	defer func() { cancel(); <-done }()
	ready := func() v1.NodeCondition {
		n, err := f.cs.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
		if err != nil {
			return v1.NodeCondition{}
		}
		if c := condition(n, v1.NodeReady); c != nil {
			return *c
		}
		return v1.NodeCondition{}
	}
	poll := func(what string, cond func() bool) {
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: Ready %+v", what, ready())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	poll("registered Ready", func() bool { return ready().Status == v1.ConditionTrue })
	e := errors.New("node is shutting down")
	health.Store(&e)
	f.m.SyncNode() // the fake clock never reaches the period
	poll("NotReady at once", func() bool {
		r := ready()
		return r.Status == v1.ConditionFalse && r.Message == "node is shutting down"
	})
}
