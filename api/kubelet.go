package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// Kubelet's streaming timeouts (its --streaming-connection-idle-timeout
// default and the CRI streaming server's stream creation timeout): a
// session nobody uses ends, and a client that upgrades but never opens its
// streams does not hold a session.
const (
	kubeletStreamIdleTimeout     = 4 * time.Hour
	kubeletStreamCreationTimeout = remotecommand.DefaultStreamCreationTimeout
)

// registerKubelet adds kubelet's API, as kubelet serves it on its --port
// (10250), to mux. The apiserver calls these for kubectl logs, exec,
// attach, port-forward and top, and for /api/v1/nodes/N/proxy/...:
//
//	GET  /containerLogs/{namespace}/{pod}/{container}  PodLogOptions'
//	     query parameters (follow, previous, sinceSeconds, sinceTime,
//	     timestamps, tailLines (or tail), limitBytes), as GET /pods/{name}/log
//	GET|POST /exec/{namespace}/{pod}[/{uid}]/{container}?command=...&input=1&output=1&error=1&tty=1
//	GET|POST /attach/{namespace}/{pod}[/{uid}]/{container}?input=1&output=1&error=1&tty=1
//	GET|POST /portForward/{namespace}/{pod}[/{uid}]   (?port= over WebSocket)
//	GET  /metrics/resource   kubelet's resource metrics (metrics-server's source)
//	GET  /stats/summary      statsapi.Summary JSON
//
// exec, attach and port-forward speak Kubernetes' own streaming protocols
// (SPDY and WebSocket, through k8s.io/cri-streaming) and run on the
// Streamer and PodDialer the local API uses. GET /pods (a v1.PodList),
// /healthz and /metrics are the local API's own: they are already the
// answers kubelet gives. Errors before a session are metav1.Status bodies.
func registerKubelet(mux *http.ServeMux, o Options) {
	o = o.withDefaults() // keeps Serve's streams
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		serveContainerLogs(w, r, o)
	})
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		for _, p := range []string{"{namespace}/{pod}/{container}", "{namespace}/{pod}/{uid}/{container}"} {
			mux.HandleFunc(m+" /exec/"+p, func(w http.ResponseWriter, r *http.Request) { serveKubeletStream(w, r, o, true) })
			mux.HandleFunc(m+" /attach/"+p, func(w http.ResponseWriter, r *http.Request) { serveKubeletStream(w, r, o, false) })
		}
		for _, p := range []string{"{namespace}/{pod}", "{namespace}/{pod}/{uid}"} {
			mux.HandleFunc(m+" /portForward/"+p, func(w http.ResponseWriter, r *http.Request) { servePortForward(w, r, o) })
		}
	}
	registerKubeletStats(mux, o)
}

// kubeletTarget is a kubelet request's pod, from its path: namespace and
// name exactly (the pod's full name, "<name>-<node>" for a static pod, as
// the apiserver knows it) and, when the path has one, its UID.
type kubeletTarget struct {
	namespace, pod, container string
	uid                       types.UID
}

func kubeletTargetOf(r *http.Request) kubeletTarget {
	return kubeletTarget{
		namespace: r.PathValue("namespace"),
		pod:       r.PathValue("pod"),
		container: r.PathValue("container"),
		uid:       types.UID(r.PathValue("uid")),
	}
}

// kubeletPod finds t's pod, or answers 404 as kubelet does and returns
// nil.
func kubeletPod(w http.ResponseWriter, s Store, t kubeletTarget) *v1.Pod {
	pods := s.Pods()
	i := slices.IndexFunc(pods, func(p v1.Pod) bool {
		return p.Namespace == t.namespace && p.Name == t.pod && (t.uid == "" || p.UID == t.uid)
	})
	if i < 0 {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, t.pod,
			fmt.Sprintf("pod %s/%s does not exist on this node", t.namespace, t.pod))
		return nil
	}
	return &pods[i]
}

// specContainer returns the pod's container (or init container) called
// name, or nil.
func specContainer(pod *v1.Pod, name string) *v1.Container {
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		if i := slices.IndexFunc(cs, func(c v1.Container) bool { return c.Name == name }); i >= 0 {
			return &cs[i]
		}
	}
	return nil
}

// kubeletLogQuery is the request's query as PodLogOptions for
// parseLogQuery: the container from the path, and kubelet's legacy
// "tail" (a number, or "all" for no limit) as tailLines.
func kubeletLogQuery(q url.Values, container string) url.Values {
	q = maps(q)
	q.Set("container", container)
	if tail := q.Get("tail"); tail != "" {
		q.Del("tail")
		if tail == "all" {
			q.Del("tailLines")
		} else {
			q.Set("tailLines", tail)
		}
	}
	return q
}

// maps copies q.
func maps(q url.Values) url.Values {
	out := make(url.Values, len(q))
	for k, v := range q {
		out[k] = slices.Clone(v)
	}
	return out
}

func serveContainerLogs(w http.ResponseWriter, r *http.Request, o Options) {
	t := kubeletTargetOf(r)
	pod := kubeletPod(w, o.Store, t)
	if pod == nil {
		return
	}
	if specContainer(pod, t.container) == nil {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, pod.Name,
			fmt.Sprintf("container %q not found in pod %q", t.container, pod.Name))
		return
	}
	servePodLog(w, r, o, pod, kubeletLogQuery(r.URL.Query(), t.container))
}

// serveKubeletStream serves kubelet's exec (exec true) or attach.
func serveKubeletStream(w http.ResponseWriter, r *http.Request, o Options, exec bool) {
	t := kubeletTargetOf(r)
	bad := func(code int, reason metav1.StatusReason, msg string) {
		writeStatus(w, code, reason, t.pod, msg)
	}
	if o.Streamer == nil {
		bad(http.StatusNotImplemented, metav1.StatusReasonMethodNotAllowed, "this podvisor serves no exec or attach")
		return
	}
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		bad(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	cmd := r.URL.Query()["command"]
	if exec && len(cmd) == 0 {
		bad(http.StatusBadRequest, metav1.StatusReasonBadRequest, "you must specify at least one command for the container")
		return
	}
	pod := kubeletPod(w, o.Store, t)
	if pod == nil {
		return
	}
	ctr := specContainer(pod, t.container)
	if ctr == nil {
		bad(http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("container %q not found in pod %q", t.container, pod.Name))
		return
	}
	st, err := runningStatus(pod, ctr.Name)
	if err != nil {
		bad(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	if !exec && opts.Stdin && !ctr.Stdin {
		bad(http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("container %s has no stdin to attach to: its manifest needs stdin: true", ctr.Name))
		return
	}
	id, _ := strings.CutPrefix(st.ContainerID, "containerd://")
	serving := r.Context()
	k := &kubeletStreamer{o: o, target: StreamTarget{Pod: pod, Container: ctr, ContainerID: id, RestartCount: st.RestartCount},
		stopping: func() bool { return serving.Err() != nil }}

	w, r, end := beginSession(w, r, o, t.pod, "exec, attach and port-forward sessions")
	if end == nil {
		return
	}
	defer end()
	switch {
	case exec:
		remotecommand.ServeExec(w, r, k, pod.Name, string(pod.UID), ctr.Name, cmd, opts,
			kubeletStreamIdleTimeout, kubeletStreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
	case r.URL.Query().Get(AttachExitCodeParam) != "":
		// podvisor's CLI asks for the process's exit code: the attach
		// runs as an exec does, whose status carries it.
		remotecommand.ServeExec(w, r, attachExecutor{k}, pod.Name, string(pod.UID), ctr.Name, nil, opts,
			kubeletStreamIdleTimeout, kubeletStreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
	default:
		remotecommand.ServeAttach(w, r, k, pod.Name, string(pod.UID), ctr.Name, opts,
			kubeletStreamIdleTimeout, kubeletStreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
	}
}

// kubeletStreamer runs cri-streaming's exec and attach on the API's
// Streamer, for the one container the request resolved.
type kubeletStreamer struct {
	o      Options
	target StreamTarget
	// stopping tells whether podvisor is stopping (Serve's context ended),
	// which ends every session.
	stopping func() bool
}

// errStopping is a session's end when podvisor stops.
var errStopping = errors.New("podvisor is stopping: the session ended")

// attachExecutor serves an attach through cri-streaming's exec, so that
// the process's exit code reaches the client as an exec's does.
type attachExecutor struct{ k *kubeletStreamer }

func (a attachExecutor) ExecInContainer(ctx context.Context, _, _, _ string, _ []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	code, err := a.k.attach(ctx, in, out, errw, tty, resize)
	if err == nil && code > 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	}
	return err
}

var (
	_ remotecommand.Executor = (*kubeletStreamer)(nil)
	_ remotecommand.Attacher = (*kubeletStreamer)(nil)
)

// session converts cri-streaming's streams: a nil writer stays nil, and
// the resizes are relayed until ctx ends.
func kubeletSession(ctx context.Context, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) Session {
	s := Session{TTY: tty}
	if in != nil {
		s.Stdin = in
	}
	if out != nil {
		s.Stdout = out
	}
	if errw != nil {
		s.Stderr = errw
	}
	// The client sends its terminal's size right after the streams are
	// made, possibly after the process would start: with a terminal, wait
	// for it (a bounded wait), so the process starts at the client's size
	// and a program that reads it at once (stty size, an editor) sees it.
	if tty && resize != nil {
		t := time.NewTimer(time.Second)
		select {
		case ts, ok := <-resize:
			if ok {
				s.Size = TermSize{Width: ts.Width, Height: ts.Height}
			}
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if resize != nil {
		ch := make(chan TermSize, 1)
		s.Resize = ch
		go func() {
			for {
				select {
				case ts, ok := <-resize:
					if !ok {
						return
					}
					// The latest size wins.
					select {
					case <-ch:
					default:
					}
					ch <- TermSize{Width: ts.Width, Height: ts.Height}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	return s
}

// ExecInContainer runs cmd; a non-zero exit is a utilexec.ExitError, which
// cri-streaming reports to the client as the exit code (kubectl exits
// with it).
func (k *kubeletStreamer) ExecInContainer(ctx context.Context, _, _, _ string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sess := kubeletSession(ctx, in, out, errw, tty, resize)
	if sess.Stdout == nil {
		sess.Stdout = io.Discard
	}
	if !sess.TTY && sess.Stderr == nil {
		sess.Stderr = io.Discard
	}
	code, err := k.o.Streamer.Exec(ctx, k.target, cmd, sess)
	var ec interface{ ExitCode() int }
	switch {
	case k.stopping():
		return errStopping
	case err != nil && errors.As(err, &ec):
		// The command could not start: the protocol's status carries the
		// exit code alone, so the reason goes where a shell puts it.
		if w := sess.Stderr; w != nil {
			fmt.Fprintf(w, "%v\n", err)
		} else {
			fmt.Fprintf(sess.Stdout, "%v\r\n", err)
		}
		return utilexec.CodeExitError{Err: err, Code: ec.ExitCode()}
	case err != nil:
		return err
	case code != 0:
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	}
	return nil
}

// AttachContainer attaches to the container's main process. Its output
// is the terminal's when the container has one, whatever the client
// asked; a client that asked for a terminal the container lacks gets its
// stderr on stdout.
func (k *kubeletStreamer) AttachContainer(ctx context.Context, _, _, _ string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	_, err := k.attach(ctx, in, out, errw, tty, resize)
	return err
}

// attach runs the Streamer's attach and returns the process's exit code
// if it exited meanwhile, else -1.
func (k *kubeletStreamer) attach(ctx context.Context, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sess := kubeletSession(ctx, in, out, errw, tty, resize)
	switch ctr := k.target.Container; {
	case ctr.TTY:
		sess.TTY = true
	case tty:
		sess.TTY = false
		if sess.Stderr == nil {
			sess.Stderr = sess.Stdout
		}
	}
	if !sess.TTY && sess.Stderr == nil {
		sess.Stderr = io.Discard
	}
	if sess.Stdout == nil {
		sess.Stdout = io.Discard
	}
	code, err := k.o.Streamer.Attach(ctx, k.target, sess)
	if k.stopping() {
		return code, errStopping
	}
	return code, err
}

// beginSession takes one of the listener's session slots for an exec,
// attach or port-forward (answering 429 when none is free: what is then
// nil) and returns w and r bound to the session: its context is the
// request's, which derives from Serve's (podvisor stopping ends it), and
// ends when the client's connection does. end releases the slot.
func beginSession(w http.ResponseWriter, r *http.Request, o Options, pod, what string) (http.ResponseWriter, *http.Request, func()) {
	l := o.limitsOf()
	if !take(w, l, l.sessions, pod, what) {
		return w, r, nil
	}
	o.streams.wg.Add(1)
	ctx, cancel := context.WithCancel(r.Context())
	return goneWriter{ResponseWriter: w, gone: cancel}, r.WithContext(ctx), func() {
		cancel()
		o.streams.wg.Done()
		release(l.sessions)
	}
}
