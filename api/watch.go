package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// InstanceHeader names, on every list and watch answer, the podvisor
// process that answered. Versions count from 0 in each process: a client
// that sees another instance than its list's lists again instead of
// resuming from a version of the old one.
const InstanceHeader = "Podvisor-Instance"

// instance is this process's InstanceHeader value.
var instance = strconv.FormatInt(time.Now().UnixNano(), 36)

// Watcher is what the list versions and the watch endpoints read;
// *status.Store is one.
type Watcher interface {
	// List returns the pods and the version they are at.
	List() ([]v1.Pod, uint64)
	// Watch delivers the pod changes after version since.
	Watch(ctx context.Context, since uint64) (<-chan status.PodChange, error)
	// EventList returns the events and the event version they are at.
	EventList() ([]v1.Event, uint64)
	// WatchEvents delivers the events recorded or updated after since.
	WatchEvents(ctx context.Context, since uint64) (<-chan status.EventChange, error)
}

var _ Watcher = (*status.Store)(nil)

// servePods is GET /pods: the list, with its resourceVersion when o has a
// Watcher, or with ?watch=true the changes after ?resourceVersion=, as
// the API server streams them: one metav1.WatchEvent JSON object a line.
func servePods(w http.ResponseWriter, r *http.Request, o Options) {
	lw := listWatch[v1.Pod, status.PodChange]{
		list: func() ([]v1.Pod, uint64) { return o.Store.Pods(), 0 },
		wrap: func(items []v1.Pod, version string) any {
			return &v1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: metav1.ListMeta{ResourceVersion: version}, Items: items}
		},
		conv: func(c status.PodChange) (watch.EventType, any) { return c.Type, c.Pod },
	}
	if o.Watcher != nil {
		lw.list, lw.watch = o.Watcher.List, o.Watcher.Watch
	}
	lw.serve(w, r)
}

// serveEvents is GET /events: the list, oldest first, or with ?watch=true
// the events recorded or updated after ?resourceVersion=.
func serveEvents(w http.ResponseWriter, r *http.Request, o Options) {
	lw := listWatch[v1.Event, status.EventChange]{
		list: func() ([]v1.Event, uint64) { return o.Store.Events(), 0 },
		wrap: func(items []v1.Event, version string) any {
			return &v1.EventList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "EventList"}, ListMeta: metav1.ListMeta{ResourceVersion: version}, Items: items}
		},
		conv: func(c status.EventChange) (watch.EventType, any) { return c.Type, c.Event },
	}
	if o.Watcher != nil {
		lw.list, lw.watch = o.Watcher.EventList, o.Watcher.WatchEvents
	}
	lw.serve(w, r)
}

// listWatch is one kind's list and watch: items T, changes C.
type listWatch[T, C any] struct {
	// list returns the items and the version they are at.
	list func() ([]T, uint64)
	// watch delivers the changes after a version; nil: this podvisor
	// serves no watches, and its lists have no version.
	watch func(ctx context.Context, since uint64) (<-chan C, error)
	// wrap makes the list object of items at version ("" unversioned).
	wrap func(items []T, version string) any
	// conv is a change's watch event type and object.
	conv func(C) (watch.EventType, any)
}

func (lw listWatch[T, C]) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if lw.watch == nil {
		if isWatch(q) {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "", "this podvisor does not serve watches")
			return
		}
		items, _ := lw.list()
		writeJSON(w, http.StatusOK, lw.wrap(items, ""))
		return
	}
	w.Header().Set(InstanceHeader, instance)
	if isWatch(q) {
		since, ok := sinceVersion(w, q)
		if !ok {
			return
		}
		ch, err := lw.watch(r.Context(), since)
		stream(w, r, ch, err, lw.conv)
		return
	}
	items, version := lw.list()
	writeJSON(w, http.StatusOK, lw.wrap(items, strconv.FormatUint(version, 10)))
}

func isWatch(q url.Values) bool {
	v := q.Get("watch")
	return v == "true" || v == "1"
}

// sinceVersion parses ?resourceVersion= ("" and "0": from the start),
// answering 400 when it is not a version.
func sinceVersion(w http.ResponseWriter, q url.Values) (uint64, bool) {
	rv := q.Get("resourceVersion")
	if rv == "" {
		return 0, true
	}
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "",
			fmt.Sprintf("resourceVersion %q: not a version (a number from a list or a watch event)", rv))
		return 0, false
	}
	return v, true
}

// stream writes the changes from ch until the client goes or the request
// ends. A watch that cannot start from the version asked for is answered
// as the API server answers it: 200, then one ERROR event with a 410
// Expired Status.
func stream[T any](w http.ResponseWriter, r *http.Request, ch <-chan T, err error, conv func(T) (watch.EventType, any)) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil && !errors.Is(err, status.ErrExpired) {
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "", "watch: "+err.Error())
		return
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	send := func(typ watch.EventType, obj any) error {
		raw, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		if err := enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}}); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err != nil {
		send(watch.Error, &metav1.Status{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
			Status:   metav1.StatusFailure,
			Message:  err.Error(),
			Reason:   metav1.StatusReasonExpired,
			Code:     http.StatusGone,
		})
		return
	}
	if rc.Flush() != nil {
		return
	}
	for c := range ch {
		if send(conv(c)) != nil {
			return // the client is gone; the request's end stops the watch
		}
	}
}
