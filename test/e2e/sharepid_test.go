package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	v1 "k8s.io/api/core/v1"
)

// sharePIDPod is the Kubernetes docs' share-process-namespace example
// (an nginx and a shell with stdin and tty) with busybox for both: the
// "nginx" is a shell that says which signals it got, its SIGTERM also in
// a file of the hostPath dir out; a third container, "done", leaves a
// termination message and exits 3.
func sharePIDPod(out string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: sharepid
spec:
  shareProcessNamespace: true
  terminationGracePeriodSeconds: 30
  containers:
  - name: nginx
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo nginx-master; trap 'echo got-SIGHUP' HUP; trap 'echo got-SIGTERM > /out/term; exit 0' TERM; while :; do sleep 1 & wait $!; done"]
    volumeMounts: [{name: out, mountPath: /out}]
  - name: shell
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    stdin: true
    tty: true
  - name: done
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo bye-from-done > /dev/termination-log; sleep 1; exit 3"]
  volumes:
  - name: out
    hostPath: {path: %s, type: Directory}
`, out)
}

// podInit is the pod init of pod uid as containerd has it: its container
// ID and its task's pid ("", 0 when there is none).
func (d *daemon) podInit(uid string) (string, uint32) {
	d.t.Helper()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		d.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctrs, err := cl.Containers(ctx, fmt.Sprintf(`labels."io.podvisor.pod.uid"==%q,labels."io.podvisor.container.type"=="pod-init"`, uid))
	if err != nil {
		d.t.Fatal(err)
	}
	if len(ctrs) != 1 {
		return fmt.Sprintf("%d init containers", len(ctrs)), 0
	}
	task, err := ctrs[0].Task(ctx, nil)
	if err != nil {
		return ctrs[0].ID(), 0
	}
	st, err := task.Status(ctx)
	if err != nil || st.Status != containerd.Running {
		return ctrs[0].ID(), 0
	}
	return ctrs[0].ID(), task.Pid()
}

// TestShareProcessNamespace proves spec.shareProcessNamespace as kubelet
// with containerd's CRI gives it, from inside the containers: PID 1 of
// each is the pod's init, one container sees and signals another's
// process, exit codes and termination messages stay right, the init is
// in the pod's cgroup and not among the pod's containers, a restarted
// podvisor keeps the same init, an init that dies gives the pod a new
// sandbox (SandboxChanged), a pod in the host's network and IPC
// namespaces shares its own PID namespace too, SIGTERM still reaches a
// main process that is not PID 1, and the pods' removal leaves no init
// behind. hostPID with it is refused by validation.
func TestShareProcessNamespace(t *testing.T) {
	d := newDaemon(t)
	out := d.hostDir("out")
	d.start()

	both := filepath.Join(d.dir, "both.yaml")
	if err := os.WriteFile(both, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: both}\nspec:\n  hostPID: true\n  shareProcessNamespace: true\n  containers: [{name: a, image: busybox}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "both.yaml:6: spec.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"
	if o, e, code := d.runCLI("", "validate", "--node-name", node, both); code != 1 || !strings.Contains(o+e, want) {
		t.Errorf("podvisor validate (hostPID with shareProcessNamespace): exit %d, want %q:\n%s%s", code, want, o, e)
	}

	name := "sharepid-" + node
	d.writeManifest("sharepid.yaml", sharePIDPod(out))
	p := d.waitPod(name, 90*time.Second, "nginx and shell running, done exited with its message", func(p *v1.Pod) bool {
		cs := containerStatus(p, "done")
		t := cs.State.Terminated
		if t == nil {
			t = cs.LastTerminationState.Terminated
		}
		return containerStatus(p, "nginx").State.Running != nil && containerStatus(p, "shell").State.Running != nil && t != nil
	})
	uid := string(p.UID)

	// The init is not one of the pod's containers.
	var names []string
	for _, cs := range p.Status.ContainerStatuses {
		names = append(names, cs.Name)
	}
	if strings.Join(names, ",") != "done,nginx,shell" && strings.Join(names, ",") != "nginx,shell,done" {
		t.Errorf("container statuses %v, want nginx, shell and done only", names)
	}
	// A main process that is not PID 1 still has its exit code and its
	// termination message read.
	done := containerStatus(p, "done")
	term := done.State.Terminated
	if term == nil {
		term = done.LastTerminationState.Terminated
	}
	if term.ExitCode != 3 || term.Reason != "Error" || term.Message != "bye-from-done\n" {
		t.Errorf("done: terminated %+v, want exit code 3, reason Error, message %q", term, "bye-from-done\n")
	}

	initID, initPID := d.podInit(uid)
	if initPID == 0 {
		t.Fatalf("pod init: %s has no running task", initID)
	}
	// Its cgroup is below the pod's, as the pause container's.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", initPID)); err != nil || !strings.Contains(string(b), "pod"+uid+"/"+initID) {
		t.Errorf("pod init's cgroups %q (%v), want each below pod%s", b, err, uid)
	}
	// It costs almost no memory of its own: the log driver's small binary
	// (a given PODVISOR_E2E_BINARY has none beside it, and runs itself).
	exe, _ := os.Stat(fmt.Sprintf("/proc/%d/exe", initPID))
	driver, _ := os.Stat(filepath.Join(filepath.Dir(podvisorBin), "podvisor-log-driver"))
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", initPID)); err == nil && exe != nil && driver != nil && os.SameFile(exe, driver) {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "RssAnon:" {
				if kb, _ := strconv.Atoi(f[1]); kb > 2048 {
					t.Errorf("pod init's anonymous memory %d kB, want at most 2048", kb)
				}
				t.Logf("pod init: %s", l)
			}
		}
	}

	// PID 1 of both containers is the pod's init; the shell sees the
	// nginx's process and signals it.
	for _, c := range []string{"nginx", "shell"} {
		o, e, code := d.runCLI("", "exec", name, "-c", c, "--", "cat", "/proc/1/cmdline")
		if code != 0 || o != "/podvisor\x00pod-init\x00" {
			t.Errorf("%s: /proc/1/cmdline %q (exit %d %s), want the pod init's", c, o, code, e)
		}
	}
	o, e, code := d.runCLI("", "exec", name, "-c", "shell", "--", "ps", "-o", "pid,args")
	if code != 0 {
		t.Fatalf("ps in shell: exit %d: %s%s", code, o, e)
	}
	nginxPID := ""
	for _, l := range strings.Split(o, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && strings.Contains(l, "nginx-master") {
			nginxPID = f[0]
		}
		if len(f) >= 2 && f[0] == "1" && f[1] != "/podvisor" {
			t.Errorf("ps in shell: PID 1 is %q, want /podvisor pod-init", l)
		}
	}
	if nginxPID == "" || !strings.Contains(o, "sleep 3600") {
		t.Fatalf("ps in shell does not show nginx's process and its own:\n%s", o)
	}
	if o, e, code := d.runCLI("", "exec", name, "-c", "shell", "--", "kill", "-HUP", nginxPID); code != 0 {
		t.Fatalf("kill -HUP %s from shell: exit %d: %s%s", nginxPID, code, o, e)
	}
	d.poll("nginx's log to show the SIGHUP", 20*time.Second, func() (bool, string) {
		lines := d.logLines(p, "nginx", 0)
		return countLines(lines, "got-SIGHUP") == 1, strings.Join(lines, "\n")
	})

	// A restarted podvisor keeps the pod and its init.
	nginxID, shellID := containerID(p, "nginx"), containerID(p, "shell")
	d.stop(syscall.SIGTERM)
	d.start()
	d.waitPod(name, 60*time.Second, "nginx and shell running as before", func(p *v1.Pod) bool {
		return containerID(p, "nginx") == nginxID && containerID(p, "shell") == shellID &&
			containerStatus(p, "nginx").State.Running != nil && containerStatus(p, "shell").State.Running != nil
	})
	if id, pid := d.podInit(uid); id != initID || pid != initPID {
		t.Errorf("after podvisor's restart the pod init is %s (pid %d), want %s (pid %d)", id, pid, initID, initPID)
	}

	// The init dies: every process of the namespace with it, and the pod
	// gets a new sandbox, a new init, and its containers again.
	if err := syscall.Kill(int(initPID), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var newInit string
	d.waitPod(name, 90*time.Second, "nginx and shell running again beside a new init", func(p *v1.Pod) bool {
		var pid uint32
		newInit, pid = d.podInit(uid)
		return pid != 0 && newInit != initID && containerID(p, "nginx") != nginxID && containerID(p, "shell") != shellID &&
			containerStatus(p, "nginx").State.Running != nil && containerStatus(p, "shell").State.Running != nil
	})
	if n, msgs := d.eventCount(name, "SandboxChanged", ""); n == 0 {
		t.Errorf("no SandboxChanged event after the init died: %v", msgs)
	}
	o, _, _ = d.runCLI("", "exec", name, "-c", "shell", "--", "cat", "/proc/1/cmdline")
	if o != "/podvisor\x00pod-init\x00" {
		t.Errorf("after the new sandbox, shell's /proc/1/cmdline %q, want the pod init's", o)
	}

	// A pod in the host's network and IPC namespaces has a sandbox with
	// only its PID namespace.
	hostName := "sharepid-host-" + node
	d.writeManifest("sharepid-host.yaml", `apiVersion: v1
kind: Pod
metadata: {name: sharepid-host}
spec:
  shareProcessNamespace: true
  hostNetwork: true
  hostIPC: true
  terminationGracePeriodSeconds: 1
  containers:
  - {name: a, image: busybox, imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
  - {name: b, image: busybox, imagePullPolicy: IfNotPresent, command: ["sleep", "3601"]}
`)
	hp := d.waitPod(hostName, 60*time.Second, "running", running)
	o, e, code = d.runCLI("", "exec", hostName, "-c", "a", "--", "sh", "-c", "cat /proc/1/cmdline; echo; ps -o args")
	if code != 0 || !strings.HasPrefix(o, "/podvisor\x00pod-init\x00\n") || !strings.Contains(o, "sleep 3601") {
		t.Errorf("hostNetwork pod: PID 1 and ps in a: exit %d: %q %s", code, o, e)
	}
	if _, pid := d.podInit(string(hp.UID)); pid == 0 {
		t.Errorf("hostNetwork pod: no running init")
	}

	// Removal: SIGTERM reaches nginx's main process (not PID 1), and no
	// init (container or task) is left.
	d.removeManifest("sharepid.yaml")
	d.removeManifest("sharepid-host.yaml")
	d.waitGone(name, 60*time.Second)
	d.waitGone(hostName, 60*time.Second)
	if b, err := os.ReadFile(filepath.Join(out, "term")); err != nil || string(b) != "got-SIGTERM\n" {
		t.Errorf("nginx's SIGTERM file: %q (%v), want got-SIGTERM", b, err)
	}
	for _, u := range []string{uid, string(hp.UID)} {
		if id, _ := d.podInit(u); id != "0 init containers" {
			t.Errorf("after the pod's removal: %s, want none", id)
		}
	}
	if left := d.containers(); len(left) > 0 {
		t.Errorf("containers left after the pod's removal: %v", left)
	}
}
