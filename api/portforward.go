package api

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
)

// portForwardDialTimeout bounds the connection to the pod's port.
const portForwardDialTimeout = 10 * time.Second

// PodDialer connects to a port of a pod as kubelet's port-forward does:
// inside the pod's network namespace, at localhost; for a hostNetwork pod
// that is the host's localhost.
type PodDialer interface {
	DialPod(ctx context.Context, pod *v1.Pod, port int32) (net.Conn, error)
}

// ipDialer is the PodDialer when Options has none: a hostNetwork pod at
// 127.0.0.1, another at its IP (which does not reach a port the pod binds
// to its localhost only).
type ipDialer struct{}

func (ipDialer) DialPod(ctx context.Context, pod *v1.Pod, port int32) (net.Conn, error) {
	host := "127.0.0.1"
	if !pod.Spec.HostNetwork {
		if host = pod.Status.PodIP; host == "" {
			return nil, fmt.Errorf("pod %s has no IP yet", pod.Name)
		}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(int(port))))
}

func servePortForward(w http.ResponseWriter, r *http.Request, o Options) {
	t := kubeletTargetOf(r)
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, t.pod, err.Error())
		return
	}
	pod := kubeletPod(w, o.Store, t)
	if pod == nil {
		return
	}
	if p := pod.Status.Phase; p == v1.PodSucceeded || p == v1.PodFailed {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, pod.Name,
			fmt.Sprintf("cannot forward a port of a completed pod; current phase is %s", p))
		return
	}
	w, r, end := beginSession(w, r, o, t.pod, "exec, attach and port-forward sessions")
	if end == nil {
		return
	}
	defer end()
	dialer := o.PodDialer
	if dialer == nil {
		dialer = ipDialer{}
	}
	portforward.ServePortForward(w, r, podForwarder{dialer: dialer, pod: pod}, pod.Name, string(pod.UID), opts,
		kubeletStreamIdleTimeout, kubeletStreamCreationTimeout, portforward.SupportedProtocols)
}

// podForwarder forwards one request's streams to its pod's ports.
type podForwarder struct {
	dialer PodDialer
	pod    *v1.Pod
}

var _ portforward.PortForwarder = podForwarder{}

// PortForward copies between stream and the pod's port until either side
// ends or ctx does.
func (f podForwarder) PortForward(ctx context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	dctx, cancel := context.WithTimeout(ctx, portForwardDialTimeout)
	conn, err := f.dialer.DialPod(dctx, f.pod, port)
	cancel()
	if err != nil {
		return fmt.Errorf("forward port %d of pod %s: %w", port, f.pod.Name, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(conn, stream)
		// The client is done sending: tell the pod, which may still answer.
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}()
	_, err = io.Copy(stream, conn)
	// The pod is done: closing the stream (deferred) ends the copy above,
	// closing conn ends it if the stream does not.
	conn.Close()
	stream.Close()
	<-done
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("forward port %d of pod %s: %w", port, f.pod.Name, err)
	}
	return nil
}
