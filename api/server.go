package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"time"

	"github.com/podvisor/podvisor/status"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrSocketInUse means another live server already answers on the socket
// path given to Serve.
var ErrSocketInUse = errors.New("socket in use by a live server")

// DefaultSocket is the socket Serve listens on and a client dials when
// none is named: layout's socket under the default run dir.
const DefaultSocket = "/run/podvisor/podvisor.sock"

// defaultShutdownTimeout bounds how long Serve waits for requests in flight.
const defaultShutdownTimeout = 5 * time.Second

// Store is what the server reads; *status.Store is one.
type Store interface {
	// Pods returns copies of the pods, sorted by namespace/name.
	Pods() []v1.Pod
	// Events returns copies of the recorded events, oldest first.
	Events() []v1.Event
	// Health returns nil when podvisor is healthy, else why not.
	Health() error
}

var _ Store = (*status.Store)(nil)

// Options configures Serve. Every field but Store has a default.
type Options struct {
	// Socket is the unix socket to serve on; DefaultSocket when empty.
	Socket string
	// Store answers the requests. Required.
	Store Store
	// Log gets the server's messages; nil discards them.
	Log *slog.Logger
	// ShutdownTimeout bounds how long Serve waits for requests in flight
	// once ctx is done; 5s when zero.
	ShutdownTimeout time.Duration
	// LogDir is the container log directory (--log-dir) that
	// GET /pods/{name}/log reads; empty: no logs are served.
	LogDir string
	// Remote, when set, serves the same API over HTTPS, every request
	// through its Filter (ListenTLS).
	Remote *TLSConfig
	// Restarter, when set, serves POST /pods/{name}/restart.
	Restarter Restarter
	// Rollouts, when set, serves GET /pods/{name}/rollout and POST
	// /pods/{name}/rollout/undo (rollout.go).
	Rollouts Rollouts
	// Watcher, when set, gives lists their resourceVersion and serves
	// ?watch=true on /pods and /events (watch.go).
	Watcher Watcher
	// Gatherer, when set, is served at GET /metrics.
	Gatherer prometheus.Gatherer
	// Stats, when set, answers GET /stats.
	Stats StatsSource
	// Streamer serves exec and attach; without one they answer 501.
	Streamer Streamer
	// ContainerdVersion, when set, tells GET /version the version of the
	// containerd podvisor talks to; it is called with a 3s deadline.
	ContainerdVersion func(context.Context) (string, error)
	// Images, when set, answers GET /images (10s deadline); without it
	// /images answers 501.
	Images ImageLister
	// Objects, when set, answers GET /objects; without it /objects
	// answers 501.
	Objects ObjectSource
	// Node, when set, answers GET /node; without it /node answers 501.
	Node NodeSource
	// PodDialer connects kubelet's port-forward to a pod's port
	// (kubelet.go); without one, a pod's IP is dialled.
	PodDialer PodDialer

	// streams holds the sessions in flight and each listener's limits
	// (stream.go); Serve's handler and its TLS server's share it, each
	// using its own listener's limits.
	streams *streams
	// remote is true in the handler ListenTLS serves: a request there
	// comes from another machine, through the Filter, never from root's
	// socket.
	remote bool
}

func (o Options) withDefaults() Options {
	if o.Socket == "" {
		o.Socket = DefaultSocket
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = defaultShutdownTimeout
	}
	if o.streams == nil {
		o.streams = newStreams()
	}
	return o
}

// Serve serves the local API on the unix socket o.Socket until ctx is done,
// then shuts down gracefully and removes the socket. It returns nil after a
// shutdown and an error when it cannot listen or serve.
//
// The socket is created with mode 0600: it is bound in a private (0700)
// directory and renamed into place once restricted, so at no moment can
// another user connect. Its parent directory is created 0700 if missing.
// A stale socket left by a dead server is removed; if a live server answers
// on the socket, Serve refuses with ErrSocketInUse. A path that exists and is
// not a socket is left alone and is an error.
//
// Endpoints (read only but for the writes below):
//
//	GET /pods          v1.PodList (apiVersion v1, kind PodList); with
//	                   ?watch=true&resourceVersion= the changes after it,
//	                   one metav1.WatchEvent a line (see watch.go)
//	GET /pods/{name}   v1.Pod, found by status.FindPods: name is the full
//	                   name "<name>-<node>" or the manifest's own name when
//	                   that is unambiguous; ?namespace= narrows the search.
//	                   Not found: 404, more than one match: 409 naming the
//	                   candidates; errors are metav1.Status bodies as the
//	                   API server sends them.
//	GET /events        v1.EventList, oldest first; ?watch=true as /pods
//	GET /healthz       "ok" with 200, or 503 with the error text
//	GET /pods/{name}/log  a container's log, text/plain (see registerLogs)
//	GET /metrics       Prometheus text format, when Options.Gatherer is set
//	GET /stats         Stats as JSON, when Options.Stats is set
//	GET /version       VersionInfo: podvisor's and containerd's versions
//	GET /images        ImageList, when Options.Images is set
//	GET /objects       ObjectList: the ConfigMaps and Secrets in use, when
//	                   Options.Objects is set (?kind=ConfigMap|Secret);
//	                   Secret values never leave (see Object.Secret)
//
// The writes: with Options.Restarter (see registerRestart)
//
//	POST /pods/{name}/restart?container=   restart now, back-off reset
//	POST /pods/{name}/rollout/undo?toRevision=   with Options.Rollouts;
//	                   socket only, 403 on the TLS port
//
// and, with Options.Streamer, the exec and attach sessions on kubelet's
// paths (registerKubelet), which the CLI uses too.
//
// With o.Remote the same handler is also served over HTTPS (ListenTLS)
// until Serve returns; an error listening there is Serve's error.
//
// Each listener has limits of its own (stream.go): its exec, attach and
// port-forward sessions, followed logs and watches (those per client
// too: a peer uid on the socket, a user on the TLS port); over one, a
// request gets 429 with a Status naming it. Nothing on the TLS port takes
// from the socket's, so root can always reach podvisor there.
func Serve(ctx context.Context, o Options) error {
	if o.Store == nil {
		return errors.New("serve local API: no Store")
	}
	o = o.withDefaults()
	socketPath, log := o.Socket, o.Log
	ln, ours, err := listenUnix(ctx, socketPath)
	if err != nil {
		return err
	}
	remoteDone, err := startRemote(ctx, o)
	if err != nil {
		ln.Close()
		removeIfSame(socketPath, ours)
		return err
	}
	defer remoteDone()
	srv := &http.Server{
		Handler:           newHandler(o),
		ConnContext:       withPeer,
		ReadHeaderTimeout: 10 * time.Second,
		// An idle keep-alive connection is not kept forever. No read or
		// write timeout: sessions, follows and watches are long.
		IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("serving local API", "socket", socketPath)

	select {
	case err := <-errc:
		removeIfSame(socketPath, ours)
		return fmt.Errorf("serve %s: %w", socketPath, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.ShutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	<-errc // http.ErrServerClosed, returned as soon as Shutdown starts
	// Shutdown does not wait for the hijacked exec and attach sessions.
	o.streams.wait(sctx)
	removeIfSame(socketPath, ours)
	if err != nil {
		return fmt.Errorf("shut down local API: %w", err)
	}
	log.Info("local API stopped", "socket", socketPath)
	return nil
}

// socketBound, nil outside tests, runs right after the socket is bound,
// while it still has the umask's mode.
var socketBound func(tmp string)

// listenUnix listens on socketPath with mode 0600 and returns the listener
// and the socket's file info, to recognise it when removing it later.
func listenUnix(ctx context.Context, socketPath string) (net.Listener, os.FileInfo, error) {
	dir := filepath.Dir(socketPath)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("create socket directory: %w", err)
		}
		// MkdirAll's mode is filtered by the umask; the contract says 0700.
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("create socket directory: %w", err)
		}
	}
	fi, err := os.Lstat(socketPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, fmt.Errorf("check socket: %w", err)
	case fi.Mode().Type() != fs.ModeSocket:
		return nil, nil, fmt.Errorf("%s exists and is not a socket", socketPath)
	default:
		d := net.Dialer{Timeout: time.Second}
		if conn, err := d.DialContext(ctx, "unix", socketPath); err == nil {
			conn.Close()
			return nil, nil, fmt.Errorf("listen on %s: %w", socketPath, ErrSocketInUse)
		}
		// Nobody answers: a socket left behind by a server that died.
		if err := os.Remove(socketPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}

	// Bind inside a private directory (MkdirTemp makes it 0700, whatever
	// the umask), restrict the socket, then rename it into place: it is
	// never reachable by another user with the umask's mode, and nothing
	// process-wide such as the umask is changed under other goroutines.
	// The directory sits beside socketPath (a rename does not cross
	// filesystems); the bound path is dir plus at most 15 bytes, and bind
	// allows 107.
	tmpDir, err := os.MkdirTemp(dir, ".s")
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", socketPath, err)
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, "s")
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", tmp)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", socketPath, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // Serve removes socketPath itself
	fail := func(err error) (net.Listener, os.FileInfo, error) {
		ln.Close()
		return nil, nil, err
	}
	if socketBound != nil {
		socketBound(tmp)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fail(fmt.Errorf("restrict socket: %w", err))
	}
	if err := os.Rename(tmp, socketPath); err != nil {
		return fail(fmt.Errorf("move socket into place: %w", err))
	}
	fi, err = os.Lstat(socketPath)
	if err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("check socket: %w", err)
	}
	return ln, fi, nil
}

// removeIfSame removes path if it is still the socket Serve created, not one
// a newer server put there.
func removeIfSame(path string, ours os.FileInfo) {
	if fi, err := os.Lstat(path); err == nil && os.SameFile(fi, ours) {
		_ = os.Remove(path)
	}
}

func newHandler(o Options) http.Handler {
	o = o.withDefaults() // keeps Serve's streams, so its limits
	s := o.Store
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pods", func(w http.ResponseWriter, r *http.Request) { servePods(w, r, o) })
	mux.HandleFunc("GET /pods/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if pod, ok := findPod(w, s, name, r.URL.Query().Get("namespace")); ok {
			writeJSON(w, http.StatusOK, pod)
		}
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) { serveEvents(w, r, o) })
	registerLogs(mux, o)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := s.Health(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err.Error())
			return
		}
		fmt.Fprintln(w, "ok")
	})
	registerRestart(mux, o)
	registerRollout(mux, o)
	registerVersion(mux, o)
	registerImages(mux, o)
	registerNode(mux, o)
	registerObjects(mux, o)
	registerMetrics(mux, o)
	registerKubelet(mux, o)
	// Go's profiler, for operators chasing CPU or memory use; the socket
	// is root's only.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "",
				fmt.Sprintf("method %s not allowed: the local API is read only (its writes are POST /pods/{name}/restart, /rollout/undo, /exec and /attach)", r.Method))
			return
		}
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "",
			fmt.Sprintf("no such endpoint %s", r.URL.Path))
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// writeStatus writes an error as the API server does, a metav1.Status.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, name, message string) {
	st := &metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure,
		Message:  message,
		Reason:   reason,
		Code:     int32(code),
	}
	if name != "" {
		st.Details = &metav1.StatusDetails{Name: name, Kind: "pods"}
	}
	writeJSON(w, code, st)
}
