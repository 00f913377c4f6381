package containerd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/api/types/task"
	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"github.com/containerd/typeurl/v2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podvisor/podvisor/supervise"
	"google.golang.org/protobuf/types/known/anypb"
)

// Exec runs p in the running container id, with the container's process
// settings (user, capabilities, cwd) and p's arguments and extra
// environment, and returns its exit code. When ctx ends first the process
// is killed and ctx's error returned.
//
// Exec returns by ctx's deadline even when the process exited and a child
// of it still holds its output open (sh -c 'sleep 600 & echo bye'): the
// output is cut there, the exit code returned, and the exec process is
// deleted in the background (the shim's delete waits up to 2 s for its
// own copy of the output). The child is the container's: it is left, as
// kubelet leaves it.
//
// Without stdin (every probe and hook) an exec is four containerd calls
// (exec, start, wait, delete) and one fifo per output writer, read on the
// caller's goroutine; see execOutput.
func (r *Runtime) Exec(ctx context.Context, id string, p supervise.ExecProcess) (_ int, err error) {
	defer markUnavailable(&err)
	if p.Stdin != nil {
		return r.execStdin(ctx, id, p)
	}
	spec, err := r.execSpec(ctx, id, p.Args, p.Env)
	if err != nil {
		return 0, err
	}
	execID := "exec-" + randomID()
	out, err := newExecOutput(execID, p.Stdout, p.Stderr)
	if err != nil {
		return 0, fmt.Errorf("exec in %s: %w", id, err)
	}
	ts := r.client.TaskService()
	if _, err := ts.Exec(ctx, &tasks.ExecProcessRequest{
		ContainerID: id, ExecID: execID, Stdout: out.stdout, Stderr: out.stderr, Spec: spec,
	}); err != nil {
		out.close()
		return 0, fmt.Errorf("exec in %s: %w", id, errgrpc.ToNative(err))
	}
	proc := execProc{ts: ts, id: id, execID: execID}
	cctx, cancel := cleanupContext(ctx)
	background := false
	defer func() {
		del := func() {
			defer cancel()
			proc.delete(cctx)
			out.close()
		}
		if background {
			go del()
			return
		}
		del()
	}()
	if err := proc.start(ctx); err != nil {
		// A start that failed on our side may have gone on in the shim.
		proc.kill(cctx)
		return 0, fmt.Errorf("start exec in %s: %w", id, err)
	}
	copied := out.copy(ctx)
	if copied {
		// The output ended: the process closed it, mostly by exiting.
		code, err := proc.wait(ctx)
		if err == nil {
			return code, nil
		}
		if ctxEnded(ctx) == nil {
			proc.kill(cctx)
			return 0, fmt.Errorf("wait exec in %s: %w", id, err)
		}
	}
	// ctx ended first. A process that exited while a child of it holds
	// its output gets its exit code; one still running is killed.
	if code, exited := proc.exited(cctx); exited {
		background = !copied
		return code, nil
	}
	proc.kill(cctx)
	background = true
	return 0, ctxEnded(ctx)
}

// ctxEnded is ctx's error, or context.DeadlineExceeded once its deadline
// has passed: containerd is given the deadline too, and its answer that
// the deadline passed (a wait cut short) can arrive a moment before ctx's
// own timer has fired.
func ctxEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// execProc is one exec process, driven by containerd's task service
// directly: the client's Process would load the task first and make three
// more calls (wait, kill, status) to delete it.
type execProc struct {
	ts         tasks.TasksClient
	id, execID string
}

// start starts the process and returns once the shim answered, even when
// ctx ends meanwhile (see startProcess).
func (p execProc) start(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	_, err := p.ts.Start(sctx, &tasks.StartRequest{ContainerID: p.id, ExecID: p.execID})
	return errgrpc.ToNative(err)
}

// wait waits for the process to exit and returns its exit code. The shim
// keeps an exec's exit until it is deleted, so waiting after the start
// misses nothing.
func (p execProc) wait(ctx context.Context) (int, error) {
	res, err := p.ts.Wait(ctx, &tasks.WaitRequest{ContainerID: p.id, ExecID: p.execID})
	if err != nil {
		return 0, errgrpc.ToNative(err)
	}
	return int(res.ExitStatus), nil
}

// exited reports whether the process has exited, with its exit code.
func (p execProc) exited(ctx context.Context) (int, bool) {
	res, err := p.ts.Get(ctx, &tasks.GetRequest{ContainerID: p.id, ExecID: p.execID})
	if err != nil || res.Process == nil || res.Process.Status != task.Status_STOPPED {
		return 0, false
	}
	return int(res.Process.ExitStatus), true
}

// kill kills the process and waits for it to exit (a process that already
// exited, or never started, answers at once).
func (p execProc) kill(ctx context.Context) {
	if _, err := p.ts.Kill(ctx, &tasks.KillRequest{ContainerID: p.id, ExecID: p.execID, Signal: uint32(syscall.SIGKILL)}); err != nil {
		return
	}
	p.wait(ctx)
}

// delete deletes the exited (or killed) process; the shim first waits up
// to 2 s for its copy of the output.
func (p execProc) delete(ctx context.Context) {
	p.ts.DeleteProcess(ctx, &tasks.DeleteProcessRequest{ContainerID: p.id, ExecID: p.execID})
}

// execStdin is Exec with stdin: through the client's Process and cio, as
// interactive sessions are.
func (r *Runtime) execStdin(ctx context.Context, id string, p supervise.ExecProcess) (int, error) {
	ctr, spec, err := r.execTarget(ctx, id)
	if err != nil {
		return 0, err
	}
	tk, err := ctr.Task(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("load task %s: %w", id, err)
	}
	proc := *spec
	proc.Terminal = false
	proc.Args = p.Args
	proc.Env = append(append([]string(nil), proc.Env...), p.Env...)
	// Its end closes the process's stdin, as the CRI plugin's exec does
	// once its stdin is copied.
	stdinDone := make(chan struct{})
	stdin := &eofNotifier{r: p.Stdin, done: stdinDone}
	stdout, stderr := newCutWriter(p.Stdout), newCutWriter(p.Stderr)
	execID := "exec-" + randomID()
	process, err := tk.Exec(ctx, execID, &proc, cio.NewCreator(cio.WithStreams(stdin, stdout, stderr)))
	if err != nil {
		return 0, fmt.Errorf("exec in %s: %w", id, err)
	}
	cctx, cancel := cleanupContext(ctx)
	background := false
	defer func() {
		if background {
			go deleteProcess(cctx, cancel, process)
			return
		}
		deleteProcess(cctx, cancel, process)
	}()
	exited, err := process.Wait(cctx)
	if err != nil {
		return 0, fmt.Errorf("wait exec in %s: %w", id, err)
	}
	if err := startProcess(ctx, process); err != nil {
		return 0, fmt.Errorf("start exec in %s: %w", id, err)
	}
	ioctx, iocancel := context.WithCancel(cctx)
	defer iocancel()
	go func() {
		select {
		case <-stdinDone:
			process.CloseIO(ioctx, client.WithStdinCloser)
		case <-ioctx.Done():
		}
	}()
	select {
	case st := <-exited:
		code, _, err := st.Result()
		if err != nil {
			return 0, fmt.Errorf("exec in %s: %w", id, err)
		}
		// Output is copied by the fifo readers; wait for them to drain,
		// until ctx's deadline.
		background = !drain(ctx, process.IO(), stdout, stderr)
		return int(code), nil
	case <-ctx.Done():
		process.Kill(cctx, syscall.SIGKILL)
		<-exited
		// A child may still hold the output: cut it here and delete in
		// the background.
		stdout.cut()
		stderr.cut()
		background = true
		return 0, ctx.Err()
	}
}

// deleteProcess deletes an exited (or killed) exec process, bounded by
// ctx, and then cancels ctx.
func deleteProcess(ctx context.Context, cancel context.CancelFunc, p client.Process) {
	defer cancel()
	p.Delete(ctx, client.WithProcessKill)
}

// drain waits for an exited process's output to be copied, until ctx
// ends: a child of the process that keeps the output open would hold it
// forever (the shim copies until the last writer closes it). At ctx's end
// outs are cut, so nothing more reaches the caller's writers once drain
// returns, and the fifo readers are cancelled. It reports whether all the
// output was copied.
func drain(ctx context.Context, pio cio.IO, outs ...*cutWriter) bool {
	if pio == nil {
		return true
	}
	done := make(chan struct{})
	go func() {
		pio.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		for _, w := range outs {
			w.cut()
		}
		pio.Cancel()
		return false
	}
}

// cutWriter passes writes to its writer until it is cut, and drops them
// from then on; cut returns once no write is in progress.
type cutWriter struct {
	mu    sync.Mutex
	w     io.Writer
	isCut bool
}

func newCutWriter(w io.Writer) *cutWriter {
	if w == nil {
		w = io.Discard
	}
	return &cutWriter{w: w}
}

func (c *cutWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isCut {
		return len(p), nil
	}
	return c.w.Write(p)
}

func (c *cutWriter) cut() {
	c.mu.Lock()
	c.isCut = true
	c.mu.Unlock()
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
	// specs are the process specs of the container's commands without
	// stdin, marshalled for the exec request, by command and environment:
	// the same probe runs the same command every period.
	specs map[string]*anypb.Any
}

// maxExecSpecs bounds the process specs kept per container: its probes'
// and hooks' commands.
const maxExecSpecs = 8

// execSpec returns the marshalled process spec that runs args with the
// extra env in container id.
func (r *Runtime) execSpec(ctx context.Context, id string, args, env []string) (*anypb.Any, error) {
	key := strings.Join(args, "\x00") + "\x01" + strings.Join(env, "\x00")
	r.mu.Lock()
	a := r.execs[id].specs[key]
	r.mu.Unlock()
	if a != nil {
		return a, nil
	}
	_, base, err := r.execTarget(ctx, id)
	if err != nil {
		return nil, err
	}
	proc := *base
	proc.Terminal = false
	proc.Args = args
	proc.Env = append(append([]string(nil), proc.Env...), env...)
	a, err = typeurl.MarshalAnyToProto(&proc)
	if err != nil {
		return nil, fmt.Errorf("exec spec for %s: %w", id, err)
	}
	r.mu.Lock()
	if t, ok := r.execs[id]; ok && len(t.specs) < maxExecSpecs {
		if t.specs == nil {
			t.specs = map[string]*anypb.Any{}
			r.execs[id] = t
		}
		t.specs[key] = a
	}
	r.mu.Unlock()
	return a, nil
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
