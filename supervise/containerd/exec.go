package containerd

import (
	"context"
	"fmt"
	"io"
	"sync"
	"syscall"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podvisor/podvisor/supervise"
)

// Exec runs p in the running container id, with the container's process
// settings (user, capabilities, cwd) and p's arguments and extra
// environment, and returns its exit code. When ctx ends first the process
// is killed and ctx's error returned.
func (r *Runtime) Exec(ctx context.Context, id string, p supervise.ExecProcess) (_ int, err error) {
	defer markUnavailable(&err)
	ctr, spec, err := r.execTarget(ctx, id)
	if err != nil {
		return 0, err
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("load task %s: %w", id, err)
	}
	proc := *spec
	proc.Terminal = false
	proc.Args = p.Args
	proc.Env = append(append([]string(nil), proc.Env...), p.Env...)
	// Without stdin there is no stdin fifo: the process reads /dev/null.
	// With one, its end closes the process's stdin, as the CRI plugin's
	// exec does once its stdin is copied.
	var stdin io.Reader
	var stdinDone chan struct{}
	if p.Stdin != nil {
		stdinDone = make(chan struct{})
		stdin = &eofNotifier{r: p.Stdin, done: stdinDone}
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
	if err := startProcess(ctx, process); err != nil {
		return 0, fmt.Errorf("start exec in %s: %w", id, err)
	}
	if stdinDone != nil {
		ioctx, iocancel := context.WithCancel(cctx)
		defer iocancel()
		go func() {
			select {
			case <-stdinDone:
				process.CloseIO(ioctx, client.WithStdinCloser)
			case <-ioctx.Done():
			}
		}()
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

// startProcess starts an exec'd process and returns once the shim has
// answered, even when ctx ends meanwhile: a start we stop waiting for goes
// on in the shim, and the process it starts would be left running with
// nobody to kill it (Delete refuses a running process). The caller sees
// ctx's end after the start, with a process it can kill. The start is
// bounded by callTimeout instead.
func startProcess(ctx context.Context, p interface{ Start(context.Context) error }) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	return p.Start(sctx)
}

// execTarget returns the container and its process spec, the base of its
// execs. A container's spec never changes, so both are kept from its first
// exec until it is removed: a probe run every second costs a task lookup,
// not two container reads.
func (r *Runtime) execTarget(ctx context.Context, id string) (client.Container, *specs.Process, error) {
	r.mu.Lock()
	t, ok := r.execs[id]
	r.mu.Unlock()
	if ok {
		return t.ctr, t.proc, nil
	}
	ctr, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("load container %s: %w", id, err)
	}
	spec, err := ctr.Spec(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("container spec %s: %w", id, err)
	}
	if spec.Process == nil {
		return nil, nil, fmt.Errorf("container %s has no process", id)
	}
	r.mu.Lock()
	r.execs[id] = execTarget{ctr: ctr, proc: spec.Process}
	r.mu.Unlock()
	return ctr, spec.Process, nil
}

// execTarget is what Exec keeps of a container.
type execTarget struct {
	ctr  client.Container
	proc *specs.Process
}

// forgetExec drops what Exec kept of a removed container.
func (r *Runtime) forgetExec(id string) {
	r.mu.Lock()
	delete(r.execs, id)
	r.mu.Unlock()
}

// eofNotifier closes done once its reader is at its end.
type eofNotifier struct {
	r    io.Reader
	done chan struct{}
	once sync.Once
}

func (e *eofNotifier) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.done) })
	}
	return n, err
}
