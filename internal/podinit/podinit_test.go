package podinit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/test/prereq"
)

// The test binary runs itself as the init when this is set: as PID 1 of a
// new PID namespace, after starting a shell whose background child is
// orphaned (and given to the init) once the shell exits.
const helperEnv = "PODINIT_TEST_INIT"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		sh := exec.Command("/bin/sh", "-c", "sleep 0.3 & exit 0")
		if err := sh.Start(); err != nil {
			os.Exit(3)
		}
		os.Exit(Run())
	}
	os.Exit(m.Run())
}

// TestRunNotPID1: outside a PID namespace of its own it refuses to run.
func TestRunNotPID1(t *testing.T) {
	if os.Getpid() == 1 {
		t.Skip("the test runs as PID 1")
	}
	if code := Run(); code != 2 {
		t.Fatalf("Run as PID %d: %d, want 2", os.Getpid(), code)
	}
}

// TestRunReapsAndEndsOnSIGTERM runs the init as PID 1 of a new PID
// namespace: the shell it started and the shell's orphaned child are both
// reaped (no zombie is left below it), and SIGTERM ends it with status 0.
func TestRunReapsAndEndsOnSIGTERM(t *testing.T) {
	prereq.Root(t, "a new PID namespace")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pid := cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	seen := false // a child was seen: none now means all were reaped
	for {
		kids, zombies := children(pid)
		seen = seen || kids > 0
		// The shell and its orphaned sleep have run and been reaped.
		if kids == 0 && seen {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("init %d still has %d children (%d zombies) after 10s", pid, kids, zombies)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("init after SIGTERM: %v, want exit status 0", err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("init did not end 10s after SIGTERM")
	}
}

// children counts the processes whose parent is pid, and the zombies
// among them.
func children(pid int) (n, zombies int) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) || err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
			n++
			if f[0] == "Z" {
				zombies++
			}
		}
	}
	return n, zombies
}
