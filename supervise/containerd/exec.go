package containerd

import (
	"context"
	"fmt"
	"io"
	"syscall"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/podvisor/podvisor/supervise"
)

// Exec runs p in the running container id, with the container's process
// settings (user, capabilities, cwd) and p's arguments and extra
// environment, and returns its exit code. When ctx ends first the process
// is killed and ctx's error returned.
func (r *Runtime) Exec(ctx context.Context, id string, p supervise.ExecProcess) (_ int, err error) {
	defer markUnavailable(&err)
	ctr, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("load container %s: %w", id, err)
	}
	spec, err := ctr.Spec(ctx)
	if err != nil {
		return 0, fmt.Errorf("container spec %s: %w", id, err)
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("load task %s: %w", id, err)
	}
	proc := *spec.Process
	proc.Terminal = false
	proc.Args = p.Args
	proc.Env = append(append([]string(nil), proc.Env...), p.Env...)
	stdin := p.Stdin
	if stdin == nil {
		stdin = emptyReader{}
	}
	stdout, stderr := p.Stdout, p.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	execID := "exec-" + randomID()
	process, err := task.Exec(ctx, execID, &proc, cio.NewCreator(cio.WithStreams(stdin, stdout, stderr)))
	if err != nil {
		return 0, fmt.Errorf("exec in %s: %w", id, err)
	}
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	defer process.Delete(cctx, client.WithProcessKill)
	exited, err := process.Wait(cctx)
	if err != nil {
		return 0, fmt.Errorf("wait exec in %s: %w", id, err)
	}
	if err := process.Start(ctx); err != nil {
		return 0, fmt.Errorf("start exec in %s: %w", id, err)
	}
	if p.Stdin == nil {
		process.CloseIO(ctx, client.WithStdinCloser)
	}
	select {
	case st := <-exited:
		code, _, err := st.Result()
		if err != nil {
			return 0, fmt.Errorf("exec in %s: %w", id, err)
		}
		// Output is copied by the fifo readers; wait for them to drain.
		if pio := process.IO(); pio != nil {
			pio.Wait()
		}
		return int(code), nil
	case <-ctx.Done():
		process.Kill(cctx, syscall.SIGKILL)
		<-exited
		return 0, ctx.Err()
	}
}

// emptyReader is a stdin that is at its end at once.
type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, io.EOF }
