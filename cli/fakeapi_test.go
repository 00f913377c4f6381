package cli

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/internal/stats"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeAPI is a podvisor API on a unix socket that answers from fixed
// objects and records the queries of the requests it gets, for the verbs
// whose daemon side needs containerd (logs, exec, stats, images, version).
type fakeAPI struct {
	pods    []v1.Pod
	events  []v1.Event
	samples []*stats.Summary // /stats answers them in turn, the last again
	images  []api.Image
	version api.VersionInfo

	mu      sync.Mutex
	queries map[string][]url.Values // "log", "exec" → the queries, in order
	nstats  int
}

func (f *fakeAPI) record(verb string, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queries == nil {
		f.queries = map[string][]url.Values{}
	}
	q := r.URL.Query()
	q.Set("pod", r.PathValue("name"))
	for _, k := range []string{"namespace", "pod", "container"} {
		if v := r.PathValue(k); v != "" {
			q.Set(k, v)
		}
	}
	f.queries[verb] = append(f.queries[verb], q)
}

func (f *fakeAPI) recorded(verb string) []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queries[verb]
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
}

func (f *fakeAPI) find(r *http.Request) *v1.Pod {
	found := status.FindPods(f.pods, r.PathValue("name"), r.URL.Query().Get("namespace"))
	if len(found) != 1 {
		return nil
	}
	return found[0]
}

// serve serves f until the test ends and returns its socket.
func (f *fakeAPI) serve(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	mux.HandleFunc("GET /pods", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: f.pods})
	})
	mux.HandleFunc("GET /pods/{name}", func(w http.ResponseWriter, r *http.Request) {
		if p := f.find(r); p != nil {
			writeJSON(w, p)
			return
		}
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "pod "+r.PathValue("name")+" not found")
	})
	mux.HandleFunc("GET /pods/{name}/log", func(w http.ResponseWriter, r *http.Request) {
		f.record("log", r)
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("2026-01-02T03:04:05.000000001Z \x1b[31mred\x1b[0m from " + r.URL.Query().Get("container") + "\n"))
	})
	// exec and attach on kubelet's paths, as the CLI asks: the request
	// is recorded (namespace, pod and container as query values), and
	// refused before the upgrade.
	for _, verb := range []string{"exec", "attach"} {
		mux.HandleFunc("POST /"+verb+"/{namespace}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
			f.record(verb, r)
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "no "+verb+" in the fake")
		})
	}
	mux.HandleFunc("POST /pods/{name}/restart", func(w http.ResponseWriter, r *http.Request) {
		f.record("restart", r)
		writeJSON(w, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Message: "restarted"})
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, v1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}, Items: f.events})
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		s := f.samples[min(f.nstats, len(f.samples)-1)]
		f.nstats++
		f.mu.Unlock()
		writeJSON(w, s)
	})
	mux.HandleFunc("GET /images", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, api.ImageList{Items: f.images})
	})
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, f.version) })

	socket := filepath.Join(t.TempDir(), "fake.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(l) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return socket
}
