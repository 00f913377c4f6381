package api

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/internal/logread"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// logPoll is how often a following log request looks for more output.
const logPoll = 200 * time.Millisecond

// registerLogs adds GET /pods/{name}/log: a container's log as the
// apiserver's pod log subresource serves it, from the CRI log files under
// o.LogDir, with PodLogOptions' query parameters (container, follow,
// previous, tailLines, sinceSeconds, sinceTime, timestamps, limitBytes). The body is
// text/plain, flushed as it goes; with follow it goes on across rotations
// and container restarts until the pod is gone or the container has
// ended for good (terminated, not to be restarted). If the server stops while
// following, the response is cut off (not ended), so a client can tell
// that from the log's end. Errors are metav1.Status bodies with kubelet's
// and the apiserver's messages. limitBytes cuts the output after that
// many bytes, as kubelet does: timestamps and newlines count, the last
// line may be cut short, and a followed log ends there.
func registerLogs(mux *http.ServeMux, o Options) {
	mux.HandleFunc("GET /pods/{name}/log", func(w http.ResponseWriter, r *http.Request) {
		serveLog(w, r, o)
	})
}

// logRequest is a parsed, validated log request.
type logRequest struct {
	container  string
	follow     bool
	previous   bool
	timestamps bool
	tail       int // -1: all
	since      time.Time
	limit      int64 // bytes of output; -1: no limit
}

// badRequest is a request error answered with 400.
type badRequest string

func (e badRequest) Error() string { return string(e) }

// parseLogQuery reads PodLogOptions from q, validated as the apiserver
// does.
func parseLogQuery(q url.Values, now time.Time) (logRequest, error) {
	req := logRequest{container: q.Get("container"), tail: -1, limit: -1}
	var err error
	boolParam := func(name string) bool {
		v := q.Get(name)
		if v == "" || err != nil {
			return false
		}
		b, perr := strconv.ParseBool(v)
		if perr != nil {
			err = badRequest(fmt.Sprintf("%s: invalid value %q: must be true or false", name, v))
		}
		return b
	}
	req.follow = boolParam("follow")
	req.previous = boolParam("previous")
	req.timestamps = boolParam("timestamps")
	if err != nil {
		return req, err
	}
	if v := q.Get("tailLines"); v != "" {
		n, perr := strconv.ParseInt(v, 10, 64)
		switch {
		case perr != nil:
			return req, badRequest(fmt.Sprintf("tailLines: invalid value %q: must be an integer", v))
		case n < 0:
			return req, badRequest(fmt.Sprintf("tailLines: Invalid value: %d: must be greater than or equal to 0", n))
		case n > 1<<24:
			n = 1 << 24 // bounds what a request holds in memory
		}
		req.tail = int(n)
	}
	if v := q.Get("limitBytes"); v != "" {
		n, perr := strconv.ParseInt(v, 10, 64)
		switch {
		case perr != nil:
			return req, badRequest(fmt.Sprintf("limitBytes: invalid value %q: must be an integer", v))
		case n < 1:
			return req, badRequest(fmt.Sprintf("limitBytes: Invalid value: %d: must be greater than 0", n))
		}
		req.limit = n
	}
	secs, stamp := q.Get("sinceSeconds"), q.Get("sinceTime")
	if secs != "" && stamp != "" {
		return req, badRequest("at most one of `sinceTime` or `sinceSeconds` may be specified")
	}
	if secs != "" {
		n, perr := strconv.ParseInt(secs, 10, 64)
		if perr != nil || n < 1 {
			return req, badRequest(fmt.Sprintf("sinceSeconds: Invalid value: %q: must be greater than 0", secs))
		}
		req.since = now.Add(-time.Duration(n) * time.Second)
	}
	if stamp != "" {
		t, perr := time.Parse(time.RFC3339Nano, stamp)
		if perr != nil {
			return req, badRequest(fmt.Sprintf("sinceTime: invalid value %q: must be an RFC3339 time", stamp))
		}
		req.since = t
	}
	return req, nil
}

// logContainer picks the container a request without one means, as the
// apiserver does, and checks a named one exists.
func logContainer(pod *v1.Pod, container string) (string, error) {
	if container != "" {
		for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			if slices.ContainsFunc(cs, func(c v1.Container) bool { return c.Name == container }) {
				return container, nil
			}
		}
		return "", badRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
	}
	switch len(pod.Spec.Containers) {
	case 0:
		return "", badRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
	case 1:
		return pod.Spec.Containers[0].Name, nil
	}
	msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, containerNames(pod.Spec.Containers))
	if len(pod.Spec.InitContainers) > 0 {
		msg += " or one of the init containers: " + containerNames(pod.Spec.InitContainers)
	}
	return "", badRequest(msg)
}

func containerNames(cs []v1.Container) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return "[" + strings.Join(names, " ") + "]"
}

// logInstance returns which run of the container the request reads, as
// its restart count (the number of its log file), following kubelet's
// validateContainerLogStatus: the previous run is the last terminated
// one; otherwise the running one, else the terminated one, else the last
// terminated one. The current run is RestartCount; a last terminated run
// that is not it is the one before.
func logInstance(pod *v1.Pod, container string, previous bool) (int32, error) {
	cs := containerStatusOf(pod, container)
	if cs == nil {
		return 0, badRequest(fmt.Sprintf("container %q in pod %q is not available", container, pod.Name))
	}
	last := cs.LastTerminationState.Terminated
	instanceOf := func(id string) (int32, error) {
		if id == cs.ContainerID {
			return cs.RestartCount, nil
		}
		if cs.RestartCount == 0 {
			return 0, badRequest(fmt.Sprintf("previous terminated container %q in pod %q not found", container, pod.Name))
		}
		return cs.RestartCount - 1, nil
	}
	switch st := cs.State; {
	case previous:
		if last == nil || last.ContainerID == "" {
			return 0, badRequest(fmt.Sprintf("previous terminated container %q in pod %q not found", container, pod.Name))
		}
		return instanceOf(last.ContainerID)
	case st.Running != nil:
		return cs.RestartCount, nil
	case st.Terminated != nil:
		if st.Terminated.ContainerID == "" && (last == nil || last.ContainerID == "") {
			return 0, badRequest(fmt.Sprintf("container %q in pod %q is terminated", container, pod.Name))
		}
		return cs.RestartCount, nil
	case last != nil:
		if last.ContainerID == "" {
			return 0, badRequest(fmt.Sprintf("container %q in pod %q is terminated", container, pod.Name))
		}
		return instanceOf(last.ContainerID)
	case st.Waiting != nil:
		switch reason := st.Waiting.Reason; reason {
		case "ErrImagePull":
			return 0, badRequest(fmt.Sprintf("container %q in pod %q is waiting to start: image can't be pulled", container, pod.Name))
		case "ImagePullBackOff":
			return 0, badRequest(fmt.Sprintf("container %q in pod %q is waiting to start: trying and failing to pull image", container, pod.Name))
		default:
			return 0, badRequest(fmt.Sprintf("container %q in pod %q is waiting to start: %v", container, pod.Name, reason))
		}
	}
	return 0, badRequest(fmt.Sprintf("container %q in pod %q is waiting to start - no logs yet", container, pod.Name))
}

func serveLog(w http.ResponseWriter, r *http.Request, o Options) {
	name := r.PathValue("name")
	pod, ok := findPod(w, o.Store, name, r.URL.Query().Get("namespace"))
	if !ok {
		return
	}
	servePodLog(w, r, o, pod, r.URL.Query())
}

// servePodLog serves pod's log with the PodLogOptions in q; the local
// API's GET /pods/{name}/log and kubelet's /containerLogs share it.
func servePodLog(w http.ResponseWriter, r *http.Request, o Options, pod *v1.Pod, q url.Values) {
	req, err := parseLogQuery(q, time.Now())
	if err == nil {
		req.container, err = logContainer(pod, req.container)
	}
	var n int32
	if err == nil {
		n, err = logInstance(pod, req.container, req.previous)
	}
	if err != nil {
		var bad badRequest
		if errors.As(err, &bad) {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, pod.Name, err.Error())
		} else {
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, pod.Name, err.Error())
		}
		return
	}
	if o.LogDir == "" {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, pod.Name, "this podvisor serves no logs (no log dir)")
		return
	}
	if req.follow && o.streams != nil {
		l := o.limitsOf()
		if !take(w, l, l.follows, pod.Name, "followed logs") {
			return
		}
		defer release(l.follows)
	}
	live := layout.Layout{LogDir: o.LogDir}.ContainerLog(pod.Namespace, pod.Name, string(pod.UID), req.container, n)

	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	rc := http.NewResponseController(w)
	// A client that stops reading does not hold the handler (and the
	// file) for ever. The 200 goes with the first bytes (or flush): a log
	// refused before then is answered as an error the client shows.
	dw := &deadlineWriter{w: w, rc: rc}
	bw := bufio.NewWriterSize(dw, 32<<10)
	flush := func() error {
		dw.sent = true
		if err := bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	refused := func(err error) bool {
		if !errors.Is(err, logread.ErrRefused) || dw.sent || bw.Buffered() > 0 {
			return false
		}
		o.Log.Warn("read log", "pod", pod.Name, "container", req.container, "err", err)
		writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, pod.Name, err.Error())
		return true
	}
	var buf []byte
	remain := req.limit
	emit := func(l logread.Line) error {
		buf = buf[:0]
		if req.timestamps {
			buf = l.Time.UTC().AppendFormat(buf, time.RFC3339Nano)
			buf = append(buf, ' ')
		}
		buf = append(buf, l.Content...)
		buf = append(buf, '\n')
		if req.limit < 0 {
			_, err := bw.Write(buf)
			return err
		}
		if int64(len(buf)) > remain {
			buf = buf[:remain]
		}
		remain -= int64(len(buf))
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		if remain == 0 {
			return errLimitReached
		}
		return nil
	}
	opts := logread.Options{Since: req.since, Tail: req.tail}
	if !req.follow || req.previous {
		// A previous run is over: following it would wait for nothing.
		if err := logread.Read(live, opts, emit); err != nil && !errors.Is(err, errLimitReached) {
			if refused(err) {
				return
			}
			o.Log.Warn("read log", "pod", pod.Name, "container", req.container, "err", err)
		}
		flush()
		return
	}
	err = logread.Follow(r.Context(), live, opts, logread.Watch{
		Poll: logPoll,
		Ended: func(live string) bool {
			pods := o.Store.Pods()
			if !logEnded(pods, pod.UID, req.container, live) {
				return false
			}
			o.Log.Debug("followed log ended", "pod", pod.Name, "container", req.container, "live", live, "status", logStatus(pods, pod.UID, req.container))
			return true
		},
		Idle: flush,
	}, emit)
	if errors.Is(err, errLimitReached) {
		// limitBytes: the log ends here, followed or not.
		flush()
		return
	}
	if r.Context().Err() != nil {
		// The client left, or the server is stopping: cut the response
		// off, so the client does not take it for the log's end.
		panic(http.ErrAbortHandler)
	}
	if err != nil {
		if refused(err) {
			return
		}
		o.Log.Warn("follow log", "pod", pod.Name, "container", req.container, "err", err)
		panic(http.ErrAbortHandler)
	}
	flush()
}

// errLimitReached ends reading a log once limitBytes are written.
var errLimitReached = errors.New("limitBytes reached")

// logEnded reports that a followed log will not grow: its pod is gone, or
// the run whose live file is live is the container's last (its state is
// terminated and the pod's restart policy will not restart it), as kubelet
// stops following a container that is not running. A container that
// exited and is to be restarted (restartPolicy Always, a sidecar, a failed
// one under OnFailure) is followed on into its next run.
func logEnded(pods []v1.Pod, uid types.UID, container, live string) bool {
	pod := podByUID(pods, uid)
	if pod == nil {
		return true
	}
	var n int32
	if _, err := fmt.Sscanf(filepath.Base(live), "%d.log", &n); err != nil {
		return false
	}
	cs := containerStatusOf(pod, container)
	if cs == nil {
		return false
	}
	// The next run's file (n = count+1) appears as its task starts, before
	// the status counts the restart: that run is followed. A count further
	// below n: the pod was removed and made again (a static pod keeps its
	// UID), its logs with it.
	if cs.RestartCount+1 < n {
		return true
	}
	t := cs.State.Terminated
	return t != nil && cs.RestartCount == n && !restarts(pod, container, t.ExitCode)
}

// restarts reports whether container of pod, terminated with exitCode, is
// to be started again: never once the pod has finished; a sidecar (an
// init container with restartPolicy Always) always; a regular init
// container that succeeded never; otherwise as the pod's restartPolicy
// says (Always when unset, its default).
func restarts(pod *v1.Pod, container string, exitCode int32) bool {
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed || pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name != container {
			continue
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			return true
		}
		if exitCode == 0 {
			return false
		}
	}
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return true
	}
}

// logStatus is the container's status as a followed log's end saw it, for
// the debug log.
func logStatus(pods []v1.Pod, uid types.UID, container string) string {
	pod := podByUID(pods, uid)
	if pod == nil {
		return "pod gone"
	}
	cs := containerStatusOf(pod, container)
	if cs == nil {
		return "no status"
	}
	return fmt.Sprintf("restarts %d, state %+v", cs.RestartCount, cs.State)
}

// logWriteTimeout bounds each write of a log response.
const logWriteTimeout = time.Minute

// deadlineWriter sets a write deadline before each write.
type deadlineWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	sent bool // the response's status and first bytes are on their way
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.sent = true
	_ = d.rc.SetWriteDeadline(time.Now().Add(logWriteTimeout))
	return d.w.Write(p)
}
