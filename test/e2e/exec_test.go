package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	v1 "k8s.io/api/core/v1"
)

const execManifest = `apiVersion: v1
kind: Pod
metadata:
  name: shell
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
  - name: side
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3601"]
`

// podvisorCmd is the podvisor CLI command args[0] talking to d.
func (d *daemon) podvisorCmd(args ...string) *exec.Cmd {
	return exec.Command(podvisorBin, append([]string{args[0], "--socket", d.sock}, args[1:]...)...)
}

// runCLI runs the podvisor CLI with stdin and returns its stdout, stderr
// and exit code.
func (d *daemon) runCLI(stdin string, args ...string) (string, string, int) {
	d.t.Helper()
	cmd := d.podvisorCmd(args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		d.t.Fatalf("podvisor %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

func allRunning(p *v1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return len(p.Status.ContainerStatuses) > 0
}

func TestExec(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("shell.yaml", execManifest)
	p := d.waitPod("shell", 60*time.Second, "running", allRunning)
	pid := d.taskPID(containerID(p, "main"))
	want, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/etc/hostname", pid))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("hostname and exit code", func(t *testing.T) {
		out, errOut, code := d.runCLI("", "exec", "shell", "--", "sh", "-c", "cat /etc/hostname; exit 3")
		if code != 3 || out != string(want) {
			t.Errorf("exec: exit %d, stdout %q, stderr %q; want exit 3 and the pod's hostname %q", code, out, errOut, want)
		}
		// Two containers and no -c: kubectl's notice names the one used.
		if !strings.Contains(errOut, `Defaulted container "main" out of: main, side`) {
			t.Errorf("stderr %q does not say which container was defaulted", errOut)
		}
	})
	t.Run("container flag", func(t *testing.T) {
		out, errOut, code := d.runCLI("", "exec", "shell", "-c", "side", "--", "cat", "/proc/1/cmdline")
		if code != 0 || out != "sleep\x003601\x00" {
			t.Errorf("exec -c side: exit %d, stdout %q, stderr %q; want side's pid 1 (sleep 3601)", code, out, errOut)
		}
		_, errOut, code = d.runCLI("", "exec", "shell", "-c", "nope", "--", "true")
		if code != 1 || !strings.Contains(errOut, `container "nope" is not valid for pod`) || !strings.Contains(errOut, "choose one of: [main side]") {
			t.Errorf("exec -c nope: exit %d, stderr %q; want 1 and the choices", code, errOut)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		out, errOut, code := d.runCLI("first line\nsecond\n", "exec", "-i", "shell", "--", "sh", "-c", "read a; read b; echo \"got $b/$a\"; cat; echo end")
		if code != 0 || out != "got second/first line\nend\n" {
			t.Errorf("exec -i: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		// Without -i the command's stdin is empty, whatever podvisor's is.
		out, _, _ = d.runCLI("ignored\n", "exec", "shell", "--", "sh", "-c", "cat; echo done")
		if out != "done\n" {
			t.Errorf("exec without -i read %q from stdin", out)
		}
	})
	t.Run("stderr", func(t *testing.T) {
		out, errOut, code := d.runCLI("", "exec", "shell", "--", "sh", "-c", "echo to-out; echo to-err >&2")
		if code != 0 || out != "to-out\n" || !strings.Contains(errOut, "to-err\n") {
			t.Errorf("exec: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("missing executable", func(t *testing.T) {
		_, errOut, code := d.runCLI("", "exec", "shell", "--", "no-such-command")
		if code != 127 || !strings.Contains(errOut, "no-such-command") {
			t.Errorf("exec no-such-command: exit %d, stderr %q; want 127 naming the command", code, errOut)
		}
	})
	t.Run("tty without a terminal", func(t *testing.T) {
		out, errOut, code := d.runCLI("", "exec", "-t", "shell", "--", "sh", "-c", "test -t 1 && echo tty || echo no-tty")
		if code != 0 || out != "no-tty\n" || !strings.Contains(errOut, "Unable to use a TTY - input is not a terminal") {
			t.Errorf("exec -t with piped stdin: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("unknown pod", func(t *testing.T) {
		_, errOut, code := d.runCLI("", "exec", "nosuchpod", "--", "true")
		if code != 1 || !strings.Contains(errOut, `pods "nosuchpod" not found`) {
			t.Errorf("exec nosuchpod: exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("client killed", func(t *testing.T) {
		cmd := d.podvisorCmd("exec", "shell", "--", "sleep", "3607")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		d.poll("the exec'd sleep in the container", 30*time.Second, func() (bool, string) {
			return len(pidsInNamespace(pid, "sleep", "3607")) == 1, "not there"
		})
		cmd.Process.Kill()
		cmd.Wait()
		d.poll("the exec'd sleep to be gone after its client died", 30*time.Second, func() (bool, string) {
			left := pidsInNamespace(pid, "sleep", "3607")
			return len(left) == 0, fmt.Sprintf("still running: %v", left)
		})
	})
	// Last: podvisor stopping ends its sessions, and leaves no exec'd
	// process behind (the pods keep running).
	t.Run("podvisor stops", func(t *testing.T) {
		cmd := d.podvisorCmd("exec", "shell", "--", "sleep", "3608")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		d.poll("the exec'd sleep in the container", 30*time.Second, func() (bool, string) {
			return len(pidsInNamespace(pid, "sleep", "3608")) == 1, "not there"
		})
		d.stop(syscall.SIGTERM)
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(errb.String(), "podvisor is stopping") {
			t.Errorf("exec when podvisor stopped: %v, stderr %q; want exit 1 saying podvisor stopped", err, errb.String())
		}
		if left := pidsInNamespace(pid, "sleep", "3608"); len(left) != 0 {
			t.Errorf("exec'd sleep still running after podvisor stopped: %v", left)
		}
		if len(pidsInNamespace(pid, "sleep", "3600")) != 1 {
			t.Errorf("the container's own process did not survive podvisor's stop")
		}
		// Back, for the clean-up through podvisor: it adopts the pod.
		d.start()
		d.waitPod("shell", 60*time.Second, "adopted after the restart", allRunning)
	})
}

// ptyReader collects a pty's output for polling.
type ptyReader struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *ptyReader) copyFrom(f *os.File) {
	b := make([]byte, 4096)
	for {
		n, err := f.Read(b)
		r.mu.Lock()
		r.buf.Write(b[:n])
		r.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (r *ptyReader) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// startPTY runs the podvisor CLI on a new pseudo-terminal of rows×cols.
func (d *daemon) startPTY(rows, cols uint16, args ...string) (*exec.Cmd, *os.File, *ptyReader) {
	d.t.Helper()
	cmd := d.podvisorCmd(args...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		d.t.Fatal(err)
	}
	out := &ptyReader{}
	go out.copyFrom(f)
	d.t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
	})
	return cmd, f, out
}

func (d *daemon) waitOutput(out *ptyReader, what, want string) {
	d.t.Helper()
	d.poll(what, 30*time.Second, func() (bool, string) {
		s := out.String()
		return strings.Contains(s, want), fmt.Sprintf("pty output so far: %q", s)
	})
}

func TestExecTTY(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("shell.yaml", execManifest)
	d.waitPod("shell", 60*time.Second, "running", allRunning)

	cmd, f, out := d.startPTY(24, 80, "exec", "-it", "shell", "-c", "main", "--", "sh")
	io.WriteString(f, "test -t 0 && echo IS-A-$((1+1))-TTY; stty size\n")
	d.waitOutput(out, "a terminal in the container", "IS-A-2-TTY")
	d.waitOutput(out, "the first size", "24 80")

	if err := pty.Setsize(f, &pty.Winsize{Rows: 41, Cols: 123}); err != nil {
		t.Fatal(err)
	}
	// A resize reaches the container asynchronously: ask (every 20th
	// look) until it shows.
	asked := 0
	d.poll("the new size inside", 30*time.Second, func() (bool, string) {
		if strings.Contains(out.String(), "41 123") {
			return true, ""
		}
		if asked%20 == 0 {
			io.WriteString(f, "stty size\n")
		}
		asked++
		return false, fmt.Sprintf("pty output so far: %q", out.String())
	})
	io.WriteString(f, "exit 5\n")
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 5 {
		t.Errorf("exec -it exited with %v, want exit code 5; output %q", err, out.String())
	}
}

func TestAttach(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("tty.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: tty
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: sh
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh"]
    stdin: true
    tty: true
`)
	p := d.waitPod("tty", 60*time.Second, "running", allRunning)

	cmd, f, out := d.startPTY(24, 80, "attach", "-it", "tty")
	io.WriteString(f, "echo attached-$((6*7))\n")
	d.waitOutput(out, "the typed command's output", "attached-42")
	// tty: true is a terminal, with the CRI plugin's TERM.
	io.WriteString(f, "test -t 0 && echo on-a-tty-$((2+3)) term=$TERM\n")
	d.waitOutput(out, "the container's stdin being a terminal", "on-a-tty-5 term=xterm")
	io.WriteString(f, "MARK=kept; echo marked-$((4*4))\n")
	d.waitOutput(out, "the mark set", "marked-16")
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()

	// The detach left the shell running; a second session reaches it,
	// through a podvisor restarted in between (the shim holds the fifo).
	d.stop(syscall.SIGTERM)
	d.start()
	d.waitPod("tty", 60*time.Second, "adopted after the restart", allRunning)
	cmd2, f2, out2 := d.startPTY(24, 80, "attach", "-it", "tty")
	io.WriteString(f2, "echo again-$((7*7))-$MARK\n")
	d.waitOutput(out2, "the second session's output, from the same shell", "again-49-kept")
	io.WriteString(f2, "exit 4\n")
	err := cmd2.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Errorf("attach ended with %v when the shell exited 4; output %q", err, out2.String())
	}
	if got := d.waitPod("tty", 60*time.Second, "restarted", func(p *v1.Pod) bool {
		return containerStatus(p, "sh").RestartCount > 0
	}); got.UID != p.UID {
		t.Errorf("pod UID changed")
	}
}

// TestAttachStdinOnce: with stdinOnce the container's stdin closes when
// the first attach that sent stdin ends; a later attach -i is refused.
func TestAttachStdinOnce(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("once.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: once
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - name: sh
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "read line; echo got-$line; sleep 3600"]
    stdin: true
    stdinOnce: true
    tty: true
`)
	d.waitPod("once", 60*time.Second, "running", allRunning)
	cmd, f, out := d.startPTY(24, 80, "attach", "-it", "once")
	io.WriteString(f, "first\n")
	d.waitOutput(out, "the line read through attach", "got-first")
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()

	d.poll("a second attach -i to be refused", 30*time.Second, func() (bool, string) {
		_, errOut, code := d.runCLI("", "attach", "-i", "once")
		return code == 1 && strings.Contains(errOut, "its stdin is closed (stdinOnce)"), fmt.Sprintf("exit %d, stderr %q", code, errOut)
	})
}
