package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/podvisor/podvisor/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrNoRevision is what a Rollouts wraps when the revision asked for is
// not kept: 422 Invalid. ErrNotFound from it is 404.
var ErrNoRevision = errors.New("no such revision")

// Rollouts serves a pod's revisions (package rollout's Controller, through
// the daemon).
type Rollouts interface {
	// Rollout is the rollout of pod key ("namespace/name").
	Rollout(key string) (*status.Rollout, error)
	// Undo runs revision to (0: the one before the running one) until
	// the manifest changes, and says what it did.
	Undo(ctx context.Context, key string, to int) (string, error)
}

// registerRollout adds GET /pods/{name}/rollout and POST
// /pods/{name}/rollout/undo?toRevision=N when o has Rollouts.
func registerRollout(mux *http.ServeMux, o Options) {
	if o.Rollouts == nil {
		return
	}
	mux.HandleFunc("GET /pods/{name}/rollout", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		pod, ok := findPod(w, o.Store, name, r.URL.Query().Get("namespace"))
		if !ok {
			return
		}
		ro, err := o.Rollouts.Rollout(pod.Namespace + "/" + pod.Name)
		if err != nil {
			writeRolloutError(w, name, err)
			return
		}
		writeJSON(w, http.StatusOK, ro)
	})
	mux.HandleFunc("POST /pods/{name}/rollout/undo", func(w http.ResponseWriter, r *http.Request) {
		name, q := r.PathValue("name"), r.URL.Query()
		pod, ok := findPod(w, o.Store, name, q.Get("namespace"))
		if !ok {
			return
		}
		to := 0
		if s := q.Get("toRevision"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, name, "toRevision: "+strconv.Quote(s)+" is not a revision number")
				return
			}
			to = n
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		msg, err := o.Rollouts.Undo(ctx, pod.Namespace+"/"+pod.Name, to)
		if err != nil {
			writeRolloutError(w, name, err)
			return
		}
		writeJSON(w, http.StatusOK, &metav1.Status{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
			Status:   metav1.StatusSuccess,
			Message:  msg,
			Code:     http.StatusOK,
			Details:  &metav1.StatusDetails{Name: pod.Name, Kind: "pods", UID: pod.UID},
		})
	})
}

func writeRolloutError(w http.ResponseWriter, name string, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, name, err.Error())
	case errors.Is(err, ErrNoRevision):
		writeStatus(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, name, err.Error())
	default:
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, name, err.Error())
	}
}
