package daemon

import (
	"context"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/internal/layout"
	ctrd "github.com/podvisor/podvisor/supervise/containerd"
)

// runtimeStreamer serves the API's exec and attach with the containerd
// runtime; neither package imports the other.
type runtimeStreamer struct {
	rt    *ctrd.Runtime
	paths layout.Layout
}

var _ api.Streamer = runtimeStreamer{}

func (s runtimeStreamer) Exec(ctx context.Context, t api.StreamTarget, cmd []string, sess api.Session) (int, error) {
	return s.rt.ExecStream(ctx, t.ContainerID, cmd, streams(ctx, sess))
}

func (s runtimeStreamer) Attach(ctx context.Context, t api.StreamTarget, sess api.Session) (int, error) {
	logPath := s.paths.ContainerLog(t.Pod.Namespace, t.Pod.Name, string(t.Pod.UID), t.Container.Name, t.RestartCount)
	return s.rt.Attach(ctx, t.ContainerID, logPath, t.Container.StdinOnce, streams(ctx, sess))
}

// streams converts a session's streams, resizes included, until ctx ends.
func streams(ctx context.Context, sess api.Session) ctrd.Streams {
	resize := make(chan ctrd.TermSize, 1)
	go func() {
		for {
			select {
			case ts := <-sess.Resize:
				select {
				case resize <- ctrd.TermSize{Width: ts.Width, Height: ts.Height}:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return ctrd.Streams{
		Stdin:  sess.Stdin,
		Stdout: sess.Stdout,
		Stderr: sess.Stderr,
		TTY:    sess.TTY,
		Size:   ctrd.TermSize{Width: sess.Size.Width, Height: sess.Size.Height},
		Resize: resize,
	}
}
