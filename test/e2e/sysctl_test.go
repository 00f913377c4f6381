package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// sysctlPod is a pod setting sysctls (YAML list items) whose containers
// sleep; its init container checks kernel.shm_rmid_forced is already set
// when it runs, when shm is "1".
func sysctlPod(name, extra, sysctls string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1
%s  securityContext:
    sysctls:
%s  containers:
  - {name: main, image: busybox, imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
`, name, extra, sysctls)
}

// hostSysctl reads a sysctl of the test's own namespaces (the host's).
func hostSysctl(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestSysctls proves spec.securityContext.sysctls as kubelet with
// containerd's CRI gives them: safe sysctls (one named with slashes) are
// set in the pod's IPC and network namespaces, seen by its init container
// before it runs and by each app container, while the host's values stay;
// an unsafe one, and one no namespace holds, make the pod Failed with
// SysctlForbidden and kubelet's message, no container made, and `podvisor
// validate` warns of both; with --allowed-unsafe-sysctls the unsafe one
// runs once podvisor starts again, as a restarted kubelet admits its pods
// again; a namespaced sysctl with hostNetwork or hostIPC is refused by
// validation, naming the field.
func TestSysctls(t *testing.T) {
	d := newDaemon(t)
	hostShm, hostRange, hostMsgmax := hostSysctl(t, "kernel.shm_rmid_forced"), hostSysctl(t, "net.ipv4.ip_local_port_range"), hostSysctl(t, "kernel.msgmax")
	if hostShm == "1" || hostRange == "32768\t33000" || hostMsgmax == "65536" {
		t.Fatalf("the host already has the test's values (shm_rmid_forced %s, ip_local_port_range %q, msgmax %s)", hostShm, hostRange, hostMsgmax)
	}
	d.start()

	inside := func(pod, ctr, script, want string) {
		t.Helper()
		d.poll(pod+"/"+ctr+": "+script, 20*time.Second, func() (bool, string) {
			out, errOut, code := d.runCLI("", "exec", pod+"-"+node, "-c", ctr, "--", "sh", "-c", script)
			return code == 0 && out == want, fmt.Sprintf("exit %d: %q %s (want %q)", code, out, errOut, want)
		})
	}
	rejected := func(pod, msg string) {
		t.Helper()
		p := d.waitPod(pod+"-"+node, 60*time.Second, "Failed SysctlForbidden", func(p *v1.Pod) bool {
			return p.Status.Phase == v1.PodFailed && p.Status.Reason == "SysctlForbidden"
		})
		if want := "Pod was rejected: " + msg; p.Status.Message != want {
			t.Errorf("%s: status message %q, want %q", pod, p.Status.Message, want)
		}
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if cs.ContainerID != "" {
				t.Errorf("%s: a rejected pod has container %s", pod, cs.ContainerID)
			}
		}
		d.poll(pod+": Warning event SysctlForbidden", 20*time.Second, func() (bool, string) {
			n, msgs := d.eventCount(pod+"-"+node, "SysctlForbidden", msg)
			return n > 0, strings.Join(msgs, "\n")
		})
	}

	// Safe sysctls: set before the init container runs, in every
	// container of the pod, not on the host.
	safe := sysctlPod("safe", `  initContainers:
  - name: check
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "test $(cat /proc/sys/kernel/shm_rmid_forced) = 1"]
`, `    - {name: kernel.shm_rmid_forced, value: "1"}
    - {name: net.ipv4.ip_local_port_range, value: "32768 33000"}
    - {name: net/ipv4/ping_group_range, value: "0 2147483647"}
`)
	safe = strings.Replace(safe, "  containers:\n", "  containers:\n  - {name: second, image: busybox, imagePullPolicy: IfNotPresent, command: [\"sleep\", \"3600\"]}\n", 1)
	d.writeManifest("safe.yaml", safe)
	p := d.waitPod("safe-"+node, 90*time.Second, "running", running)
	if cs := p.Status.InitContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 0 {
		t.Errorf("init container: %+v", cs)
	}
	const read = "cat /proc/sys/kernel/shm_rmid_forced /proc/sys/net/ipv4/ip_local_port_range /proc/sys/net/ipv4/ping_group_range"
	for _, c := range []string{"main", "second"} {
		inside("safe", c, read, "1\n32768\t33000\n0\t2147483647\n")
	}
	if got := hostSysctl(t, "kernel.shm_rmid_forced"); got != hostShm {
		t.Errorf("the host's kernel.shm_rmid_forced is now %s, was %s", got, hostShm)
	}
	if got := hostSysctl(t, "net.ipv4.ip_local_port_range"); got != hostRange {
		t.Errorf("the host's net.ipv4.ip_local_port_range is now %q, was %q", got, hostRange)
	}

	// An unsafe sysctl, and one that is not namespaced: refused by the
	// node, as kubelet's admission refuses them.
	unsafe := sysctlPod("unsafe", "", `    - {name: kernel.shm_rmid_forced, value: "1"}
    - {name: kernel.msgmax, value: "65536"}
`)
	nodeWide := sysctlPod("node-wide", "", "    - {name: vm.max_map_count, value: \"262144\"}\n")
	d.writeManifest("unsafe.yaml", unsafe)
	d.writeManifest("node-wide.yaml", nodeWide)
	rejected("unsafe", `forbidden sysctl: "kernel.msgmax" not allowlisted`)
	rejected("node-wide", `forbidden sysctl: "vm.max_map_count" not allowlisted`)

	// podvisor validate: valid manifests, with a warning for each; a
	// namespaced sysctl in a namespace shared with the host is invalid.
	vdir := filepath.Join(d.dir, "validate")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		file, manifest string
		code           int
		want           string
	}{
		{"unsafe.yaml", unsafe, 0, `warning: ` + filepath.Join(vdir, "unsafe.yaml") + `:9: spec.securityContext.sysctls[1].name: the pod would fail with SysctlForbidden (forbidden sysctl: "kernel.msgmax" not allowlisted): allow it with --allowed-unsafe-sysctls`},
		{"node-wide.yaml", nodeWide, 0, `spec.securityContext.sysctls[0].name: the pod would fail with SysctlForbidden (forbidden sysctl: "vm.max_map_count" not allowlisted): it is not namespaced`},
		{"hostnet.yaml", sysctlPod("hostnet", "  hostNetwork: true\n", "    - {name: net.ipv4.ip_local_port_range, value: \"32768 33000\"}\n"), 1,
			`spec.securityContext.sysctls[0].name: Invalid value: "net.ipv4.ip_local_port_range": may not be specified when 'hostNetwork' is true`},
		{"hostipc.yaml", sysctlPod("hostipc", "  hostIPC: true\n", "    - {name: kernel.shm_rmid_forced, value: \"1\"}\n"), 1,
			`spec.securityContext.sysctls[0].name: Invalid value: "kernel.shm_rmid_forced": may not be specified when 'hostIPC' is true`},
	} {
		path := filepath.Join(vdir, v.file)
		if err := os.WriteFile(path, []byte(v.manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := d.runCLI("", "validate", "--node-name", node, path)
		if code != v.code || !strings.Contains(out+errOut, v.want) {
			t.Errorf("podvisor validate %s: exit %d, want %d and %q:\n%s%s", v.file, code, v.code, v.want, out, errOut)
		}
	}
	// The daemon takes the hostNetwork one for an invalid manifest: no pod.
	d.writeManifest("hostnet.yaml", sysctlPod("hostnet", "  hostNetwork: true\n", "    - {name: net.ipv4.tcp_syncookies, value: \"1\"}\n"))
	d.poll("hostnet: InvalidManifest", 30*time.Second, func() (bool, string) {
		n, msgs := d.eventCount(node, "InvalidManifest", "spec.securityContext.sysctls[0].name: Invalid value: \"net.ipv4.tcp_syncookies\": may not be specified when 'hostNetwork' is true")
		return n > 0, strings.Join(msgs, "\n")
	})
	if _, err := d.pod("hostnet-" + node); err == nil {
		t.Error("a pod was made of the hostNetwork manifest")
	}

	// Allowed: the next podvisor admits the pod again, and it runs with
	// the value in its own IPC namespace. The running pod goes on.
	d.stop(syscall.SIGTERM)
	d.extraArgs = append(d.extraArgs, "--allowed-unsafe-sysctls", "kernel.msg*")
	d.start()
	d.waitPod("unsafe-"+node, 90*time.Second, "running", running)
	inside("unsafe", "main", "cat /proc/sys/kernel/msgmax /proc/sys/kernel/shm_rmid_forced", "65536\n1\n")
	if got := hostSysctl(t, "kernel.msgmax"); got != hostMsgmax {
		t.Errorf("the host's kernel.msgmax is now %s, was %s", got, hostMsgmax)
	}
	rejected("node-wide", `forbidden sysctl: "vm.max_map_count" not allowlisted`)
	inside("safe", "main", read, "1\n32768\t33000\n0\t2147483647\n")

	for _, f := range []string{"safe", "unsafe", "node-wide", "hostnet"} {
		d.removeManifest(f + ".yaml")
	}
	for _, f := range []string{"safe", "unsafe", "node-wide"} {
		d.waitGone(f+"-"+node, 60*time.Second)
	}
}
