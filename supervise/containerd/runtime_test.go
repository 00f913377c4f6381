package containerd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/supervise"
	"github.com/podvisor/podvisor/test/testenv"
	"github.com/podvisor/podvisor/test/testimage"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// stopperRef names a test image on a registry at a loopback port nothing
// serves: a pull fails at once and sends nothing off the machine.
const stopperRef = "127.0.0.1:9/stopper:1.0"

// startRuntime starts a private containerd (skipping without root) and a
// Runtime on it whose log driver is built from this module.
func startRuntime(t *testing.T) (string, *testenv.Env, *client.Client, *Runtime) {
	t.Helper()
	testenv.RequireRoot(t)
	dir := t.TempDir()
	env, err := testenv.Start(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	env.Logf = t.Logf
	t.Cleanup(func() { env.Stop() })
	c, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	driver := filepath.Join(dir, "podvisor-log-driver")
	build := exec.Command("go", "build", "-o", driver, "github.com/podvisor/podvisor/cmd/podvisor-log-driver")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build log driver: %v\n%s", err, out)
	}
	return dir, env, c, New(c, Options{Namespace: env.Namespace, LogDriver: driver, LogMaxSize: 1 << 20})
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRuntime drives the containerd Runtime against a real daemon: import,
// images by pull policy, create with the stop signal fixed in a label,
// start with CRI logs, exec, events, stop with a deadline, remove.
func TestRuntime(t *testing.T) {
	dir, env, c, rt := startRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Import: the busybox archive, and one whose image stops on SIGUSR1,
	// stopper:1.0.
	names, err := importFile(ctx, rt, env.ImageArchive)
	if err != nil || !slices.Contains(names, env.ImageRef) {
		t.Fatalf("import busybox = %v, %v", names, err)
	}
	stopper := filepath.Join(dir, "stopper.tar")
	if err := testimage.Build(stopper, testimage.Options{Ref: stopperRef, StopSignal: "SIGUSR1"}); err != nil {
		t.Fatal(err)
	}
	if names, err := importFile(ctx, rt, stopper); err != nil || !slices.Contains(names, stopperRef) {
		t.Fatalf("import stopper = %v, %v", names, err)
	}
	// The digests of images that exist, by name; a missing one is left out.
	digests, err := rt.ImageDigests(ctx, []string{env.ImageRef, stopperRef, "docker.io/library/missing:1"})
	if err != nil || len(digests) != 2 || !strings.HasPrefix(digests[env.ImageRef], "sha256:") || digests[stopperRef] == digests[env.ImageRef] {
		t.Errorf("ImageDigests = %v, %v; want the two imported images' distinct digests", digests, err)
	}
	bad := filepath.Join(dir, "bad.tar")
	os.WriteFile(bad, []byte("not an archive"), 0o644)
	if _, err := importFile(ctx, rt, bad); err == nil {
		t.Error("a broken archive imported")
	}

	if _, err := rt.EnsureImage(ctx, &v1.Container{Image: "missing", ImagePullPolicy: v1.PullNever}); !errors.Is(err, supervise.ErrImageNeverPull) {
		t.Errorf("missing image with Never = %v", err)
	}
	if _, err := rt.EnsureImage(ctx, &v1.Container{Image: "UPPER::bad"}); err == nil {
		t.Error("an invalid image name was accepted")
	}
	img, err := rt.EnsureImage(ctx, &v1.Container{Image: stopperRef, ImagePullPolicy: v1.PullIfNotPresent})
	if err != nil || img.Ref != stopperRef || !strings.Contains(img.ID, "@sha256:") {
		t.Fatalf("EnsureImage = %+v, %v", img, err)
	}
	// Always with no registry (a loopback port nothing serves, so the
	// test sends nothing off the machine): the local image, with a
	// warning.
	always, err := rt.EnsureImage(ctx, &v1.Container{Image: stopperRef, ImagePullPolicy: v1.PullAlways})
	if err != nil || always.Warning == "" {
		t.Fatalf("Always offline = %+v, %v", always, err)
	}

	evctx, evcancel := context.WithCancel(ctx)
	defer evcancel()
	events, errs := rt.Events(evctx)

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{HostNetwork: true, HostIPC: true}}
	cfg := func(id, script string, im supervise.Image) supervise.ContainerConfig {
		return supervise.ContainerConfig{
			ID:          id,
			Labels:      map[string]string{supervise.LabelPodUID: "u1", supervise.LabelContainer: id},
			Image:       im,
			Pod:         pod,
			Container:   &v1.Container{Name: id, Command: []string{"sh", "-c", script}},
			SandboxID:   "sb-" + id,
			CgroupsPath: filepath.Join("/", env.Namespace, id),
			Resources:   supervise.Resources{CPUShares: 2, CPUPeriod: 100000},
		}
	}
	script := `trap 'echo got-usr1; exit 3' USR1; echo hello; while true; do sleep 0.1; done`
	if err := rt.Create(ctx, cfg("one", script, img)); err != nil {
		t.Fatal(err)
	}
	if st, err := rt.State(ctx, "one"); err != nil || !st.Exists || st.HasTask {
		t.Fatalf("created: %+v, %v", st, err)
	}
	// The relist's listing agrees with State: a container with no task
	// is not listed.
	listed := func(what string, want supervise.ContainerState, in bool) {
		t.Helper()
		tasks, err := rt.TaskStates(ctx)
		if err != nil {
			t.Fatalf("%s: TaskStates: %v", what, err)
		}
		if got, ok := tasks["one"]; ok != in || (in && (got.Pid != want.Pid || got.Running != want.Running ||
			got.HasTask != want.HasTask || got.ExitCode != want.ExitCode || !got.ExitedAt.Equal(want.ExitedAt))) {
			t.Errorf("%s: listed %+v (%v), State %+v", what, got, ok, want)
		}
	}
	listed("created", supervise.ContainerState{}, false)
	logPath := filepath.Join(dir, "logs", "one", "0.log")
	if err := rt.Start(ctx, "one", logPath); err != nil {
		t.Fatal(err)
	}
	st, err := rt.State(ctx, "one")
	if err != nil || !st.Running || st.Pid == 0 {
		t.Fatalf("started: %+v, %v", st, err)
	}
	listed("started", st, true)
	poll(t, "hello in the CRI log", func() bool {
		b, _ := os.ReadFile(logPath)
		return bytes.Contains(b, []byte(" stdout F hello"))
	})

	var out, errOut bytes.Buffer
	code, err := rt.Exec(ctx, "one", supervise.ExecProcess{Args: []string{"sh", "-c", "echo out; echo err >&2; exit 4"}, Stdout: &out, Stderr: &errOut})
	if err != nil || code != 4 || out.String() != "out\n" || errOut.String() != "err\n" {
		t.Fatalf("exec = %d, %v, stdout %q stderr %q", code, err, out.String(), errOut.String())
	}
	// Without stdin an exec reads end-of-file at once (no fifo is made).
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	code, err = rt.Exec(cctx, "one", supervise.ExecProcess{Args: []string{"cat"}})
	ccancel()
	if err != nil || code != 0 {
		t.Errorf("exec of cat without stdin = %d, %v", code, err)
	}
	// With stdin, it reads what is given.
	out.Reset()
	code, err = rt.Exec(ctx, "one", supervise.ExecProcess{Args: []string{"cat"}, Stdin: strings.NewReader("in"), Stdout: &out})
	if err != nil || code != 0 || out.String() != "in" {
		t.Errorf("exec of cat with stdin = %d, %v, %q", code, err, out.String())
	}
	// An exec that outlives its context is killed.
	ectx, ecancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = rt.Exec(ectx, "one", supervise.ExecProcess{Args: []string{"sleep", "100"}})
	ecancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("exec past its deadline = %v", err)
	}

	info, err := rt.Info(ctx, "one")
	if err != nil || info.Labels[supervise.LabelStopSignal] != "10" || info.CreatedAt.IsZero() {
		t.Fatalf("info = %+v, %v", info, err)
	}
	list, err := rt.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "one" {
		t.Fatalf("list = %+v, %v", list, err)
	}

	// Stop sends the recorded signal, which the script traps.
	if err := rt.Stop(ctx, "one", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	st, err = rt.State(ctx, "one")
	if err != nil || st.Running || st.ExitCode != 3 || st.ExitedAt.IsZero() {
		t.Fatalf("stopped: %+v, %v", st, err)
	}
	listed("stopped", st, true)
	select {
	case ev := <-events:
		if ev.Type != supervise.EventExit || ev.ContainerID != "one" {
			t.Errorf("event %+v", ev)
		}
	case err := <-errs:
		t.Fatalf("event stream: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no exit event")
	}

	// A process that ignores its stop signal is killed after the grace.
	busybox, err := rt.EnsureImage(ctx, &v1.Container{Image: "busybox"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Create(ctx, cfg("two", `trap '' TERM; while true; do sleep 0.1; done`, busybox)); err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx, "two", filepath.Join(dir, "logs", "two", "0.log")); err != nil {
		t.Fatal(err)
	}
	if info, _ := rt.Info(ctx, "two"); info.Labels[supervise.LabelStopSignal] != "15" {
		t.Errorf("busybox stop signal label %q", info.Labels[supervise.LabelStopSignal])
	}
	start := time.Now()
	if err := rt.Stop(ctx, "two", time.Second); err != nil {
		t.Fatal(err)
	}
	if st, _ := rt.State(ctx, "two"); st.ExitCode != 137 || time.Since(start) < time.Second {
		t.Errorf("killed after %v: %+v", time.Since(start), st)
	}

	// A container made before stop signals were labels is stopped with its
	// image's STOPSIGNAL.
	if err := rt.Create(ctx, cfg("three", script, img)); err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx, "three", filepath.Join(dir, "logs", "three", "0.log")); err != nil {
		t.Fatal(err)
	}
	three, err := c.LoadContainer(ctx, "three")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := three.SetLabels(ctx, map[string]string{supervise.LabelStopSignal: ""}); err != nil {
		t.Fatal(err)
	}
	// The trap is set once it says hello; a signal before that is lost.
	poll(t, "hello from three", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "logs", "three", "0.log"))
		return bytes.Contains(b, []byte(" stdout F hello"))
	})
	if err := rt.Stop(ctx, "three", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if st, _ := rt.State(ctx, "three"); st.ExitCode != 3 {
		t.Errorf("unlabelled container stopped with exit %d, want 3 (its image's SIGUSR1 trapped)", st.ExitCode)
	}

	for _, id := range []string{"one", "two", "three"} {
		if err := rt.Remove(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := rt.Remove(ctx, id); err != nil {
			t.Errorf("second remove of %s: %v", id, err)
		}
		if err := rt.Stop(ctx, id, time.Second); err != nil {
			t.Errorf("stop of removed %s: %v", id, err)
		}
		if st, err := rt.State(ctx, id); err != nil || st.Exists {
			t.Errorf("removed %s: %+v, %v", id, st, err)
		}
	}
	if _, err := rt.Info(ctx, "one"); err == nil {
		t.Error("info of a removed container")
	}
	if err := rt.Start(ctx, "none", logPath); err == nil {
		t.Error("start of a missing container")
	}
	// The stream ends with its context.
	evcancel()
	select {
	case err := <-errs:
		if !errors.Is(err, context.Canceled) {
			t.Logf("stream ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("event stream did not end with its context")
	}
}

// importFile imports the archive at path, as the images dir does: the
// Runtime reads the file its caller opened.
func importFile(ctx context.Context, rt *Runtime, path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return rt.Import(ctx, filepath.Base(path), f)
}
