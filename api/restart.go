package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Errors a Restarter wraps, so the server answers as the API server
// would: ErrRestartRefused is 409 Conflict (the pod will not run again),
// ErrNoContainer 422 Invalid (no such container to restart). Any other
// error is 500.
var (
	ErrRestartRefused = errors.New("restart refused")
	ErrNoContainer    = errors.New("no such container")
)

// restartTimeout bounds a restart request: the Restarter only hands the
// request to the pod's worker.
const restartTimeout = 10 * time.Second

// Restarter restarts a pod's containers now ("" all of them), resetting
// their crash back-off. The daemon's is the supervisor's Restart.
type Restarter interface {
	Restart(ctx context.Context, uid types.UID, container string) error
}

// registerRestart adds POST /pods/{name}/restart?container=&namespace=,
// the API's one write, when o has a Restarter.
func registerRestart(mux *http.ServeMux, o Options) {
	if o.Restarter == nil {
		return
	}
	mux.HandleFunc("POST /pods/{name}/restart", func(w http.ResponseWriter, r *http.Request) {
		name, q := r.PathValue("name"), r.URL.Query()
		pod, ok := findPod(w, o.Store, name, q.Get("namespace"))
		if !ok {
			return
		}
		container := q.Get("container")
		ctx, cancel := context.WithTimeout(r.Context(), restartTimeout)
		defer cancel()
		err := o.Restarter.Restart(ctx, pod.UID, container)
		switch {
		case err == nil:
			what := "pod/" + pod.Name
			if container != "" {
				what = fmt.Sprintf("container %s of pod/%s", container, pod.Name)
			}
			writeJSON(w, http.StatusOK, &metav1.Status{
				TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
				Status:   metav1.StatusSuccess,
				Message:  what + " restarted",
				Code:     http.StatusOK,
				Details:  &metav1.StatusDetails{Name: pod.Name, Kind: "pods", UID: pod.UID},
			})
		case errors.Is(err, ErrNotFound):
			writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, name, err.Error())
		case errors.Is(err, ErrRestartRefused):
			writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict, name, err.Error())
		case errors.Is(err, ErrNoContainer):
			writeStatus(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, name, err.Error())
		default:
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, name, "restart: "+err.Error())
		}
	})
}

// podByUID is the pod of pods with uid, or nil.
func podByUID(pods []v1.Pod, uid types.UID) *v1.Pod {
	for i := range pods {
		if pods[i].UID == uid {
			return &pods[i]
		}
	}
	return nil
}

// containerStatusOf is the status of pod's container (init or app) called
// name, or nil when it has none.
func containerStatusOf(pod *v1.Pod, name string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// findPod finds one pod by name as GET /pods/{name} does, writing the
// error answer when there is not exactly one.
func findPod(w http.ResponseWriter, s Store, name, namespace string) (*v1.Pod, bool) {
	found := status.FindPods(s.Pods(), name, namespace)
	switch len(found) {
	case 1:
		return found[0], true
	case 0:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, name, fmt.Sprintf("pods %q not found", name))
	default:
		candidates := make([]string, 0, len(found))
		for _, p := range found {
			candidates = append(candidates, p.Namespace+"/"+p.Name)
		}
		slices.Sort(candidates)
		writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict, name,
			fmt.Sprintf("pod name %q is ambiguous, it matches: %s", name, strings.Join(candidates, ", ")))
	}
	return nil, false
}
