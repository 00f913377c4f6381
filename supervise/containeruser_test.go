package supervise

import (
	"context"
	"errors"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The identity the runtime gave a container's process is its status's
// user, as kubelet reports it; unknown, there is none.
func TestContainerStatusUser(t *testing.T) {
	e := newEnv(t)
	p := testPod("u", v1.RestartPolicyAlways, nil, "main", "other")
	w := e.worker(p)
	// The container IDs are known only once made: answer for any main.
	want := &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{3000, 4000}}}
	e.s.users = userFunc(func(id string) *v1.ContainerUser {
		if c := w.rec.Apps["main"]; c != nil && c.ID == id {
			return want
		}
		return nil
	})
	e.step(w)
	if got := e.status(p, "main").User; !reflect.DeepEqual(got, want) {
		t.Errorf("main's user = %+v, want %+v", got, want)
	}
	if got := e.status(p, "other").User; got != nil {
		t.Errorf("other's user = %+v, want none", got)
	}
	recs, _ := loadRecords(e.s.layout)
	if got := recs[p.UID].Apps["main"].User; !reflect.DeepEqual(got, want) {
		t.Errorf("recorded user = %+v", got)
	}
}

type userFunc func(id string) *v1.ContainerUser

func (f userFunc) ContainerUser(_ context.Context, id string) (*v1.ContainerUser, error) {
	if u := f(id); u != nil {
		return u, nil
	}
	return nil, errors.New("no such container")
}
