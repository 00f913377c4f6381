package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/test/testimage"
	v1 "k8s.io/api/core/v1"
)

// docsDir holds the Kubernetes documentation's example manifests and
// seccomp profiles, byte for byte as the website has them (SOURCES.md
// names each file's origin).
const docsDir = "testdata/docs"

// docsImages builds the images the docs' examples name, under those exact
// names, into images: local stand-ins made of the test's busybox image
// and, where the docs' behaviour needs a program, test/e2e/testdata/docs/
// standin. The manifests are not changed; only what their images hold is
// the test's.
func docsImages(t *testing.T, images string) {
	t.Helper()
	standin := filepath.Join(t.TempDir(), "standin")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", standin, "./"+docsDir+"/standin")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the stand-in programs: %v\n%s", err, out)
	}
	conf := filepath.Join(t.TempDir(), "nginx.conf")
	if err := os.WriteFile(conf, []byte("\nuser  nginx;\nworker_processes  1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for file, opts := range map[string]testimage.Options{
		// nginx: a master and a worker (UID 101) with nginx's titles.
		"nginx.tar": {Ref: "nginx", Cmd: []string{"nginx", "-g", "daemon off;"}, StopSignal: "SIGQUIT",
			ExtraFiles: map[string]string{"/usr/sbin/nginx": standin, "/etc/nginx/nginx.conf": conf}},
		"busybox-1.28.tar": {Ref: "busybox:1.28"},
		// hashicorp/http-echo: answers -text on port 5678.
		"http-echo.tar": {Ref: "hashicorp/http-echo:1.0", Entrypoint: []string{"/http-echo"},
			ExtraFiles: map[string]string{"/http-echo": standin}},
		"debian.tar": {Ref: "debian"},
	} {
		if err := testimage.Build(filepath.Join(images, file), opts); err != nil {
			t.Fatalf("%s: %v", opts.Ref, err)
		}
	}
}

// docsManifest reads one of the docs' files.
func docsManifest(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(docsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// psLine is one process of busybox's `ps ax`.
type psLine struct{ pid, user, command string }

// psAx runs `ps ax` in a container and parses it.
func (d *daemon) psAx(pod, ctr string) ([]psLine, string) {
	out, errOut, code := d.runCLI("", "exec", pod, "-c", ctr, "--", "ps", "ax")
	if code != 0 {
		return nil, fmt.Sprintf("ps ax: exit %d: %s%s", code, out, errOut)
	}
	// PID USER [TIME] COMMAND..., as busybox was built.
	lines := strings.Split(out, "\n")
	cmd := 2
	if strings.Contains(lines[0], "TIME") {
		cmd = 3
	}
	var ps []psLine
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > cmd {
			ps = append(ps, psLine{f[0], f[1], strings.Join(f[cmd:], " ")})
		}
	}
	return ps, out
}

// TestDocsExamples runs the Kubernetes documentation's example pods for
// shareProcessNamespace, seccomp Localhost profiles, user namespaces and
// sysctls unmodified (their images are local stand-ins the test builds,
// see docsImages) and checks, from inside the containers, what each docs
// page says happens:
//
//   - share-process-namespace.yaml (tasks/configure-pod-container/
//     share-process-namespace): `ps ax` in the shell container shows
//     nginx's master and its worker (UID 101) beside PID 1, which is
//     podvisor's pod init where kubelet has /pause; `kill -HUP` of the
//     master makes a new worker; the master's files are reached through
//     /proc/$pid/root; and `kill -HUP 1` reaches the pod's init, which
//     (as /pause) goes on, so the pod goes on.
//   - audit-pod, violation-pod, fine-pod (tutorials/security/seccomp) with
//     the docs' profiles under <--seccomp-profile-root>/profiles: audit-pod
//     runs confined and answers "just made some syscalls!"; violation-pod's
//     container cannot start and waits (see there for how podvisor's
//     status differs from the docs' `kubectl get pod` line); fine-pod runs
//     and answers.
//   - user-namespaces-stateless.yaml (tasks/configure-pod-container/
//     user-namespaces): on containerd 2 the container's user namespace is
//     not the host's and /proc/self/uid_map maps root to a non-zero host
//     range; containerd 1.6 cannot, and the pod waits with the reason.
//   - the sysctl page's snippet (it has no complete example file; the
//     test completes its "..." with one container): with the page's
//     --allowed-unsafe-sysctls 'kernel.msg*,net.core.somaxconn' the pod
//     runs with the three values in /proc/sys; `podvisor validate` without
//     the flag says the pod would fail, as the page says.
func TestDocsExamples(t *testing.T) {
	requireEnv(t)
	root := filepath.Join(os.TempDir(), "pv-e2e-docs-seccomp-"+randHex(4))
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.MkdirAll(filepath.Join(root, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"audit.json", "violation.json", "fine-grained.json"} {
		if err := os.WriteFile(filepath.Join(root, "profiles", p), []byte(docsManifest(t, "profiles/"+p)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The docs' snippet ends in "  ...": the least that makes it a pod.
	snippet := docsManifest(t, "sysctl-example.snippet.yaml")
	if !strings.HasSuffix(snippet, "\n  ...\n") {
		t.Fatalf("sysctl-example.snippet.yaml does not end in the docs' \"  ...\" line:\n%s", snippet)
	}
	sysctlPod := strings.TrimSuffix(snippet, "  ...\n") + "  containers:\n  - name: sysctl-example\n    image: busybox:1.28\n    command: [\"sleep\", \"3600\"]\n"

	d := newDaemon(t, "--seccomp-profile-root", root, "--allowed-unsafe-sysctls", "kernel.msg*,net.core.somaxconn")
	docsImages(t, d.images)
	d.start()
	for _, f := range []string{"share-process-namespace.yaml", "audit-pod.yaml", "violation-pod.yaml", "fine-pod.yaml", "user-namespaces-stateless.yaml"} {
		d.writeManifest(f, docsManifest(t, f))
	}
	d.writeManifest("sysctl-example.yaml", sysctlPod)

	// d's helpers fail the test they run in.
	parent := d.t
	sub := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			d.t = t
			defer func() { d.t = parent }()
			f(t)
		})
	}

	sub("share-process-namespace", func(t *testing.T) {
		const pod = "nginx-" + node
		p := d.waitPod(pod, 60*time.Second, "running", running)
		var master, worker string
		d.poll("ps ax in shell to show PID 1, nginx's master and worker", 20*time.Second, func() (bool, string) {
			ps, out := d.psAx(pod, "shell")
			master, worker = "", ""
			pid1 := false
			for _, l := range ps {
				switch {
				case l.pid == "1":
					pid1 = l.command == "/podvisor pod-init"
				case l.command == "nginx: master process nginx -g daemon off;" && l.user == "root":
					master = l.pid
				case l.command == "nginx: worker process" && l.user == "101":
					worker = l.pid
				}
			}
			return pid1 && master != "" && worker != "" && strings.Contains(out, "sleep 3600"), out
		})
		// SIGHUP: nginx starts a new worker and stops the old one.
		if out, errOut, code := d.runCLI("", "exec", pod, "-c", "shell", "--", "kill", "-HUP", master); code != 0 {
			t.Fatalf("kill -HUP %s: exit %d: %s%s", master, code, out, errOut)
		}
		d.poll("a new nginx worker after SIGHUP", 20*time.Second, func() (bool, string) {
			ps, out := d.psAx(pod, "shell")
			var workers []string
			masterLeft := false
			for _, l := range ps {
				masterLeft = masterLeft || l.pid == master && strings.HasPrefix(l.command, "nginx: master process")
				if l.command == "nginx: worker process" {
					workers = append(workers, l.pid)
				}
			}
			return masterLeft && len(workers) == 1 && workers[0] != worker, out
		})
		// Another container's files, through /proc/$pid/root.
		if out, errOut, code := d.runCLI("", "exec", pod, "-c", "shell", "--", "head", "/proc/"+master+"/root/etc/nginx/nginx.conf"); code != 0 || !strings.Contains(out, "worker_processes  1;") {
			t.Errorf("head /proc/%s/root/etc/nginx/nginx.conf: exit %d: %q %s", master, code, out, errOut)
		}
		// kill -HUP 1 signals the pod's init, which goes on as /pause
		// does (the kernel drops a signal PID 1 has no handler for): no
		// container is restarted, the sandbox stays. So do the signals
		// whose Go default would end the init.
		_, initPID := d.podInit(string(p.UID))
		for _, sig := range []string{"HUP", "QUIT", "ABRT", "TRAP", "SYS", "SEGV", "BUS", "FPE", "USR1"} {
			if out, errOut, code := d.runCLI("", "exec", pod, "-c", "shell", "--", "kill", "-"+sig, "1"); code != 0 {
				t.Fatalf("kill -%s 1: exit %d: %s%s", sig, code, out, errOut)
			}
		}
		if out, errOut, code := d.runCLI("", "exec", pod, "-c", "shell", "--", "ps", "ax"); code != 0 || !strings.Contains(out, "nginx: master process") {
			t.Errorf("after the signals to PID 1, ps ax in shell: exit %d: %s%s", code, out, errOut)
		}
		d.hold("the pod unchanged after the signals to PID 1", time.Second, func() (bool, string) {
			q, err := d.pod(pod)
			if err != nil {
				return false, err.Error()
			}
			_, pid := d.podInit(string(p.UID))
			same := pid == initPID && running(q) &&
				containerID(q, "nginx") == containerID(p, "nginx") && containerID(q, "shell") == containerID(p, "shell")
			return same, fmt.Sprintf("init pid %d (was %d), nginx %s, shell %s", pid, initPID, containerID(q, "nginx"), containerID(q, "shell"))
		})
	})

	sub("seccomp", func(t *testing.T) {
		const answer = "just made some syscalls!\n"
		for _, name := range []string{"audit-pod", "fine-pod"} {
			var p *v1.Pod
			d.poll(name+" running", 60*time.Second, func() (bool, string) {
				var err error
				if p, err = d.pod(name + "-" + node); err != nil {
					return false, err.Error()
				}
				cs := containerStatus(p, "test-container")
				return running(p), fmt.Sprintf("%+v; last log: %q", cs.State, d.logLines(p, "test-container", max(cs.RestartCount-1, 0)))
			})
			d.waitHTTP("http://"+p.Status.PodIP+":5678/", answer)
		}
		// audit.json logs and allows every syscall: a shell runs there,
		// and sees http-echo in seccomp filter mode.
		out, errOut, code := d.runCLI("", "exec", "audit-pod-"+node, "--", "sh", "-c", `sed -n 's/^Seccomp:\t//p' /proc/1/status; cat /proc/1/cmdline`)
		if want := "2\n/http-echo\x00-text=just made some syscalls!\x00"; code != 0 || out != want {
			t.Errorf("audit-pod: seccomp mode and command: exit %d: %q %s, want %q", code, out, errOut, want)
		}
		// violation.json allows nothing: the container cannot start (runc
		// cannot even reach the program). The docs show kubectl's
		// "0/1 CrashLoopBackOff 1": as kubelet with containerd's CRI,
		// the failed start is a terminated run (StartError, exit code
		// 128), started again at once, then backed off.
		p := d.waitPod("violation-pod-"+node, 60*time.Second, "CrashLoopBackOff after a failed start", func(p *v1.Pod) bool {
			cs := containerStatus(p, "test-container")
			last := cs.LastTerminationState.Terminated
			return waitingReason(p, "test-container") == "CrashLoopBackOff" && cs.RestartCount >= 1 &&
				last != nil && last.Reason == "StartError" && last.ExitCode == 128 && !cs.Ready && (cs.Started == nil || !*cs.Started)
		})
		cs := containerStatus(p, "test-container")
		d.poll("violation-pod: Warning Failed event", 20*time.Second, func() (bool, string) {
			n, msgs := d.eventCount("violation-pod-"+node, "Failed", "")
			return n > 0, strings.Join(msgs, "\n")
		})
		t.Logf("violation-pod: waiting %s %q, restarts %d, last state %+v",
			cs.State.Waiting.Reason, cs.State.Waiting.Message, cs.RestartCount, cs.LastTerminationState.Terminated)
	})

	sub("user-namespaces", func(t *testing.T) {
		const pod = "userns-" + node
		if major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(env.ContainerdVersion, "v"), ".", 2)[0]); major < 2 {
			want := "can't set `spec.hostUsers: false`, runtime does not support user namespaces: containerd " + env.ContainerdVersion + " cannot map the image's files to the pod's IDs (containerd 2.0 or later can)"
			d.poll("FailedCreatePodSandBox with the reason", 60*time.Second, func() (bool, string) {
				n, msgs := d.eventCount(pod, "FailedCreatePodSandBox", want)
				return n > 0, strings.Join(msgs, "\n")
			})
			d.waitPod(pod, 10*time.Second, "waiting in ContainerCreating", func(p *v1.Pod) bool {
				return waitingReason(p, "shell") == "ContainerCreating"
			})
			return
		}
		d.waitPod(pod, 60*time.Second, "running", running)
		base, ok, why := d.usernsBase(pod)
		if !ok || base == 0 {
			t.Fatalf("uid_map: base %d: %s", base, why)
		}
		host, err := os.Readlink("/proc/self/ns/user")
		if err != nil {
			t.Fatal(err)
		}
		out, errOut, code := d.runCLI("", "exec", pod, "--", "readlink", "/proc/self/ns/user")
		if code != 0 || !strings.HasPrefix(out, "user:[") || strings.TrimSpace(out) == host {
			t.Errorf("readlink /proc/self/ns/user: exit %d: %q %s; the host's is %s", code, out, errOut, host)
		}
		t.Logf("userns: uid_map 0 %d 65536, %s (host %s)", base, strings.TrimSpace(out), host)
	})

	sub("sysctls", func(t *testing.T) {
		const pod = "sysctl-example-" + node
		d.waitPod(pod, 60*time.Second, "running", running)
		out, errOut, code := d.runCLI("", "exec", pod, "--", "cat", "/proc/sys/kernel/shm_rmid_forced", "/proc/sys/net/core/somaxconn", "/proc/sys/kernel/msgmax")
		if want := "0\n1024\n65536\n"; code != 0 || out != want {
			t.Errorf("sysctls in the container: exit %d: %q %s, want %q", code, out, errOut, want)
		}
		// Without the flag: both unsafe sysctls would fail the pod.
		path := filepath.Join(d.dir, "sysctl-example.yaml")
		if err := os.WriteFile(path, []byte(sysctlPod), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code = d.runCLI("", "validate", "--node-name", node, path)
		for _, s := range []string{"net.core.somaxconn", "kernel.msgmax"} {
			if w := `the pod would fail with SysctlForbidden (forbidden sysctl: "` + s + `" not allowlisted)`; code != 0 || !strings.Contains(out+errOut, w) {
				t.Errorf("podvisor validate without --allowed-unsafe-sysctls: exit %d, want 0 and %q:\n%s%s", code, w, out, errOut)
			}
		}
	})

	// The pods go. The docs' sleep runs as PID 1, which ignores SIGTERM:
	// userns and sysctl-example would each take their whole grace period
	// (30s). Once podvisor is stopping them, the host kills them.
	sleepers := map[string]uint32{}
	for pod, ctr := range map[string]string{"userns": "shell", "sysctl-example": "sysctl-example"} {
		if p, err := d.pod(pod + "-" + node); err == nil && containerID(p, ctr) != "" {
			sleepers[pod] = d.taskPID(containerID(p, ctr))
		}
	}
	pods := map[string]string{"share-process-namespace.yaml": "nginx", "audit-pod.yaml": "audit-pod", "violation-pod.yaml": "violation-pod",
		"fine-pod.yaml": "fine-pod", "user-namespaces-stateless.yaml": "userns", "sysctl-example.yaml": "sysctl-example"}
	for f := range pods {
		d.removeManifest(f)
	}
	for pod, pid := range sleepers {
		d.poll(pod+": Killing event", 20*time.Second, func() (bool, string) {
			n, msgs := d.eventCount(pod+"-"+node, "Killing", "")
			return n > 0, strings.Join(msgs, "\n")
		})
		if pid != 0 {
			syscall.Kill(int(pid), syscall.SIGKILL)
		}
	}
	for _, pod := range pods {
		d.waitGone(pod+"-"+node, 60*time.Second)
	}
}
