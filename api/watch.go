package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
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
	lw.serve(w, r, o)
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
	lw.serve(w, r, o)
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

// serve answers r: a watch only within the caps of the listener o serves.
func (lw listWatch[T, C]) serve(w http.ResponseWriter, r *http.Request, o Options) {
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
		l := o.limitsOf()
		client := watchClient(r, o.remote)
		if msg := l.watches.take(client); msg != "" {
			tooMany(w, "", fmt.Sprintf("%s on this podvisor's %s; try again when one ends", msg, l.where))
			return
		}
		defer l.watches.release(client)
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

// watchLimit caps a listener's watches in all and per client: one client
// cannot take every watch, and all together cannot take podvisor's memory
// (each watch keeps the changes its client has not read yet).
type watchLimit struct {
	total, perClient int

	mu   sync.Mutex
	open int
	by   map[string]int // open watches by client
}

func newWatchLimit(total, perClient int) *watchLimit {
	return &watchLimit{total: total, perClient: perClient, by: make(map[string]int)}
}

// take counts a watch of client, or returns which cap is full ("" when
// it counted one). The caller gives it back with release.
func (l *watchLimit) take(client string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.by[client] >= l.perClient:
		return fmt.Sprintf("too many watches for %s: %d are open, the most for one client", client, l.by[client])
	case l.open >= l.total:
		return fmt.Sprintf("too many watches: %d are open", l.open)
	}
	l.open++
	l.by[client]++
	return ""
}

func (l *watchLimit) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.by[client]--; l.by[client] <= 0 {
		delete(l.by, client)
	}
}

// watchClient names who asks for a watch, the key of its per-client cap:
// on the socket the peer's uid (SO_PEERCRED); on the TLS port the user
// its verified client certificate names (its common name, as
// auth.Certificates authenticates it), else a hash of its bearer token
// (the token is its credential: one user's tokens count apart). The
// Filter has already refused a request with neither.
func watchClient(r *http.Request, remote bool) string {
	if !remote {
		if p, ok := LocalPeer(r.Context()); ok {
			return "uid " + strconv.Itoa(p.UID)
		}
		return "an unknown peer"
	}
	if cs := r.TLS; cs != nil && len(cs.VerifiedChains) > 0 && len(cs.VerifiedChains[0]) > 0 {
		if cn := cs.VerifiedChains[0][0].Subject.CommonName; cn != "" {
			return "user " + strconv.Quote(cn)
		}
	}
	// As the API server's bearer token authenticator reads the header.
	if scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " "); ok && strings.EqualFold(scheme, "bearer") {
		if tok = strings.TrimSpace(tok); tok != "" {
			sum := sha256.Sum256([]byte(tok))
			return "the bearer token with SHA-256 " + hex.EncodeToString(sum[:6]) + "..."
		}
	}
	return "anonymous clients"
}
