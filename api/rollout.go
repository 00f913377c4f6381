package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/podvisor/podvisor/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrNoRevision is what a Rollouts wraps when the revision asked for is
// not kept: 422 Invalid. ErrNotFound from it is 404.
var ErrNoRevision = errors.New("no such revision")

// ErrUndoRefused is what a Rollouts wraps when it will not run the
// revision asked for (it grants more than the manifest does): 422 Invalid,
// its message saying why.
var ErrUndoRefused = errors.New("rollout undo refused")

// remoteUndoRefused is the TLS port's answer to an undo.
const remoteUndoRefused = "rollout undo is refused on the remote API: undo changes what the node runs, " +
	"and only root may do that, on the node's local socket (podvisor rollout undo)"

// Undone is what an Undo did.
type Undone struct {
	// Revision is the revision the pod runs now.
	Revision int
	// Message says so, for the operator.
	Message string
}

// Rollouts serves a pod's revisions (package rollout's Controller, through
// the daemon).
type Rollouts interface {
	// Rollout is the rollout of pod key ("namespace/name").
	Rollout(key string) (*status.Rollout, error)
	// Undo runs revision to (0: the one before the running one) until
	// the manifest changes, and says what it did.
	Undo(ctx context.Context, key string, to int) (Undone, error)
}

// registerRollout adds GET /pods/{name}/rollout and POST
// /pods/{name}/rollout/undo?toRevision=N when o has Rollouts.
//
// Undo changes what the node runs, which only root decides: it is
// served on the unix socket only, to root or the daemon's own user as the
// kernel names the caller, and every request is audited with the caller
// and the decision. The TLS port answers 403, after its Filter has
// authenticated and authorized the request as any other.
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
		a := undoAudit{log: o.Log, r: r, remote: o.remote, pod: name, namespace: q.Get("namespace"), to: q.Get("toRevision")}
		if why := undoForbidden(o.remote, r); why != "" {
			a.write("refused", "reason", why)
			writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, name, why)
			return
		}
		pod, ok := findPod(w, o.Store, name, q.Get("namespace"))
		if !ok {
			a.write("error", "reason", "no single pod of that name")
			return
		}
		a.pod, a.namespace = pod.Name, pod.Namespace
		to := 0
		if s := q.Get("toRevision"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				msg := "toRevision: " + strconv.Quote(s) + " is not a revision number"
				a.write("error", "reason", msg)
				writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, name, msg)
				return
			}
			to = n
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		done, err := o.Rollouts.Undo(ctx, pod.Namespace+"/"+pod.Name, to)
		if err != nil {
			decision := "error"
			if errors.Is(err, ErrUndoRefused) {
				decision = "refused"
			}
			a.write(decision, "reason", err.Error())
			writeRolloutError(w, name, err)
			return
		}
		a.write("allowed", "revision", done.Revision)
		writeJSON(w, http.StatusOK, &metav1.Status{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
			Status:   metav1.StatusSuccess,
			Message:  done.Message,
			Code:     http.StatusOK,
			Details:  &metav1.StatusDetails{Name: pod.Name, Kind: "pods", UID: pod.UID},
		})
	})
}

// undoForbidden says why r may not undo, or "" when it may: only through
// the socket, from root or the daemon's own user.
func undoForbidden(remote bool, r *http.Request) string {
	if remote {
		return remoteUndoRefused
	}
	p, ok := LocalPeer(r.Context())
	if !ok {
		return "rollout undo is refused: the caller on the local socket is not known, and only root may change what the node runs"
	}
	if p.UID != 0 && p.UID != os.Geteuid() {
		return fmt.Sprintf("rollout undo is refused: the caller runs as uid %d; only root may change what the node runs", p.UID)
	}
	return ""
}

// undoAudit is the audit of one undo request, in the shape of the remote
// API's session audit (package auth): the action, the pod, who asked
// (the peer's uid and pid on the socket, the address on the TLS port)
// and the decision.
type undoAudit struct {
	log            *slog.Logger
	r              *http.Request
	remote         bool
	pod, namespace string
	to             string // toRevision as asked; "" is the one before the running one
}

func (a undoAudit) write(decision string, extra ...any) {
	to := a.to
	if to == "" {
		to = "previous"
	}
	args := []any{"action", "rollout-undo", "pod", a.pod}
	if a.namespace != "" {
		args = append(args, "namespace", a.namespace)
	}
	args = append(args, "toRevision", to)
	msg := "local API session"
	if a.remote {
		msg = "remote API session"
		args = append(args, "remote", a.r.RemoteAddr)
	} else if p, ok := LocalPeer(a.r.Context()); ok {
		args = append(args, "uid", p.UID, "pid", p.PID)
	}
	args = append(args, "decision", decision)
	a.log.Info(msg, append(args, extra...)...)
}

func writeRolloutError(w http.ResponseWriter, name string, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, name, err.Error())
	case errors.Is(err, ErrNoRevision), errors.Is(err, ErrUndoRefused):
		writeStatus(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, name, err.Error())
	default:
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, name, err.Error())
	}
}
