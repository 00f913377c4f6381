package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/podvisor/podvisor/internal/cgroupfs"
	"github.com/podvisor/podvisor/internal/crilog"
	v1 "k8s.io/api/core/v1"
)

func webManifest(www string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["httpd", "-f", "-p", "80", "-h", "/www"]
    resources:
      limits: {memory: 64Mi, cpu: 250m}
    volumeMounts:
    - {name: www, mountPath: /www, readOnly: true}
  - name: ticker
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "while true; do echo tick; sleep 0.2; done"]
    resources:
      limits: {memory: 16Mi, cpu: 100m}
  volumes:
  - name: www
    hostPath: {path: %s, type: Directory}
`, www)
}

func cgroupValue(t *testing.T, parent, uid, id string, v1file, v2file string) string {
	t.Helper()
	var p string
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		p = filepath.Join("/sys/fs/cgroup", parent, "pod"+uid, id, v2file)
	} else {
		ctrl := strings.SplitN(v1file, ".", 2)[0]
		p = filepath.Join("/sys/fs/cgroup", ctrl, parent, "pod"+uid, id, v1file)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read cgroup: %v", err)
	}
	return strings.TrimSpace(string(b))
}

func nsLink(t *testing.T, pid uint32, ns string) string {
	t.Helper()
	l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestWebPod covers the walking skeleton's main path: a networked, limited
// pod runs; restarts are new containers; podvisor can be stopped (SIGTERM,
// kill -9 of its process group) and containerd restarted without any
// container restarting; exits are seen by events right after a restart.
func TestWebPod(t *testing.T) {
	d := newDaemon(t)
	www := filepath.Join(d.dir, "www")
	os.MkdirAll(www, 0o755)
	os.WriteFile(filepath.Join(www, "index.html"), []byte("hello from podvisor\n"), 0o644)
	d.start()
	d.writeManifest("web.yaml", webManifest(www))
	const name = "web-" + node
	p := d.waitPod(name, 60*time.Second, "Running", running)

	// get pods NAME -o json through the CLI, flags after the positional name.
	out, err := exec.Command(podvisorBin, "get", "pods", "web", "-o", "json", "--socket", d.sock).Output()
	if err != nil {
		t.Fatalf("get pods: %v", err)
	}
	// One pod named: the Pod itself, as kubectl prints it.
	var got v1.Pod
	if err := json.Unmarshal(out, &got); err != nil || got.Kind != "Pod" || got.Name != name {
		t.Fatalf("get pods web -o json: %v, kind %q name %q\n%s", err, got.Kind, got.Name, out)
	}
	if got.Status.Phase != v1.PodRunning || got.Status.PodIP == "" || got.Status.QOSClass != v1.PodQOSGuaranteed {
		t.Fatalf("status: phase %s podIP %q qos %s", got.Status.Phase, got.Status.PodIP, got.Status.QOSClass)
	}
	if !env.Subnet.Contains(netIP(got.Status.PodIP)) {
		t.Fatalf("pod IP %s not in the test network %s", got.Status.PodIP, env.Subnet)
	}

	// The host reaches the pod's IP.
	d.waitHTTP("http://"+got.Status.PodIP+"/index.html", "hello from podvisor\n")

	// Limits in the container's cgroup.
	httpdID := containerID(p, "httpd")
	if v := cgroupValue(t, d.ns, string(p.UID), httpdID, "memory.limit_in_bytes", "memory.max"); v != "67108864" {
		t.Errorf("memory limit = %s, want 67108864", v)
	}
	if v := cgroupValue(t, d.ns, string(p.UID), httpdID, "cpu.cfs_quota_us", "cpu.max"); v != "25000" && v != "25000 100000" {
		t.Errorf("cpu quota = %s, want 25000", v)
	}
	// Inside, the container sees its own limit at /sys/fs/cgroup, as a JVM
	// or a GOMAXPROCS-aware program reads it, and cannot change it: the
	// mount is read-only, as the CRI plugin makes it.
	script := `d=/sys/fs/cgroup/memory; [ -d $d ] || d=/sys/fs/cgroup
cat $d/memory.limit_in_bytes 2>/dev/null || cat $d/memory.max
mkdir $d/podvisor-e2e 2>&1 || true`
	inside, errOut, code := d.runCLI("", "exec", "web", "-c", "httpd", "--", "sh", "-c", script)
	if code != 0 || !strings.HasPrefix(inside, "67108864\n") || !strings.Contains(inside, "Read-only file system") {
		t.Errorf("the container's view of /sys/fs/cgroup: exit %d, stdout %q, stderr %q; want its 64Mi limit, read-only", code, inside, errOut)
	}

	if !cgroupfs.IsV2("/sys/fs/cgroup") {
		checkCgroupV1View(t, d, filepath.Join("/", d.ns, "pod"+string(p.UID), httpdID))
	}

	// Both containers share the pod's network and IPC namespaces and
	// /dev/shm, have the pod's hostname, and live in one shim.
	tickerID := containerID(p, "ticker")
	hp, tp := d.taskPID(httpdID), d.taskPID(tickerID)
	for _, ns := range []string{"net", "ipc"} {
		if a, b := nsLink(t, hp, ns), nsLink(t, tp, ns); a != b {
			t.Errorf("%s namespace differs: %s vs %s", ns, a, b)
		}
	}
	var s1, s2 syscall.Stat_t
	syscall.Stat(fmt.Sprintf("/proc/%d/root/dev/shm", hp), &s1)
	syscall.Stat(fmt.Sprintf("/proc/%d/root/dev/shm", tp), &s2)
	if s1.Ino != s2.Ino || s1.Dev != s2.Dev {
		t.Errorf("/dev/shm differs between containers")
	}
	for _, pid := range []uint32{hp, tp} {
		h, _ := os.ReadFile(fmt.Sprintf("/proc/%d/root/etc/hostname", pid))
		if strings.TrimSpace(string(h)) != name {
			t.Errorf("hostname of pid %d = %q, want %q", pid, h, name)
		}
	}
	if n := shimCount(d.ns); n != 1 {
		t.Errorf("%d shims for the pod, want 1", n)
	}

	// Logs in CRI format under the log dir.
	logPath := filepath.Join(d.logs, fmt.Sprintf("default_%s_%s", name, p.UID), "ticker", "0.log")
	d.poll("ticker output in its log", 10*time.Second, func() (bool, string) {
		b, err := os.ReadFile(logPath)
		if err != nil {
			return false, err.Error()
		}
		first, _, _ := strings.Cut(string(b), "\n")
		r, err := crilog.Parse([]byte(first))
		if err != nil {
			return false, err.Error()
		}
		return r.Stream == "stdout" && string(r.Content) == "tick" && !r.Partial, first
	})

	// Killing the container's process restarts it as a new container.
	syscall.Kill(int(hp), syscall.SIGKILL)
	p = d.waitPod(name, 30*time.Second, "httpd restarted once", func(p *v1.Pod) bool {
		cs := containerStatus(p, "httpd")
		return cs.RestartCount == 1 && cs.State.Running != nil
	})
	cs := containerStatus(p, "httpd")
	if id := containerID(p, "httpd"); id == httpdID || id == "" {
		t.Errorf("restarted container kept its ID %s", id)
	}
	if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 137 ||
		cs.LastTerminationState.Terminated.ContainerID != "containerd://"+httpdID {
		t.Errorf("lastState = %+v", cs.LastTerminationState)
	}
	httpdID = containerID(p, "httpd")
	hp = d.taskPID(httpdID)
	tp = d.taskPID(tickerID)

	// SIGTERM to podvisor: pods keep running, logs keep flowing.
	d.stop(syscall.SIGTERM)
	before, _ := os.Stat(logPath)
	d.poll("log to grow while podvisor is down", 10*time.Second, func() (bool, string) {
		st, err := os.Stat(logPath)
		return err == nil && st.Size() > before.Size(), "log did not grow"
	})
	d.start()
	p = d.waitPod(name, 30*time.Second, "adopted", running)
	if got := d.taskPID(containerID(p, "httpd")); got != hp || containerID(p, "httpd") != httpdID {
		t.Fatalf("after SIGTERM restart httpd pid %d (was %d), id %s (was %s)", got, hp, containerID(p, "httpd"), httpdID)
	}
	if got := containerStatus(p, "httpd").RestartCount; got != 1 {
		t.Fatalf("restartCount after podvisor restart = %d, want 1", got)
	}

	// kill -9 of podvisor's whole process group.
	d.killGroup()
	d.start()
	p = d.waitPod(name, 30*time.Second, "adopted", running)
	if got := d.taskPID(httpdID); got != hp {
		t.Fatalf("after kill -9 httpd pid %d, was %d", got, hp)
	}
	if got := d.taskPID(tickerID); got != tp {
		t.Fatalf("after kill -9 ticker pid %d, was %d", got, tp)
	}

	// Exit watching is re-armed at once: with relists an hour apart, the
	// restart can only come from the event stream.
	syscall.Kill(int(hp), syscall.SIGKILL)
	p = d.waitPod(name, 15*time.Second, "httpd restarted twice", func(p *v1.Pod) bool {
		cs := containerStatus(p, "httpd")
		return cs.RestartCount == 2 && cs.State.Running != nil
	})
	httpdID = containerID(p, "httpd")
	hp = d.taskPID(httpdID)

	// containerd restarted: no container restarts, and events flow again.
	if err := env.Restart(); err != nil {
		t.Fatal(err)
	}
	p = d.waitPod(name, 15*time.Second, "running after containerd restart", running)
	if got := d.taskPID(httpdID); got != hp {
		t.Fatalf("after containerd restart httpd pid %d, was %d", got, hp)
	}
	if got := containerStatus(p, "httpd").RestartCount; got != 2 {
		t.Fatalf("restartCount after containerd restart = %d, want 2", got)
	}
	syscall.Kill(int(hp), syscall.SIGKILL)
	d.waitPod(name, 30*time.Second, "httpd restarted after containerd restart", func(p *v1.Pod) bool {
		cs := containerStatus(p, "httpd")
		return cs.RestartCount == 3 && cs.State.Running != nil
	})
}

// checkCgroupV1View checks, from inside web's httpd, what runc makes of a
// cgroup mount on v1 (podvisor writes it into the spec): a tmpfs at
// /sys/fs/cgroup and on it, for each of the host's hierarchies, the
// container's own cgroup (cgroup, below the hierarchy's root) read-only,
// its CPU limit read where a program looks for it.
func checkCgroupV1View(t *testing.T, d *daemon, cgroup string) {
	t.Helper()
	out, errOut, code := d.runCLI("", "exec", "web", "-c", "httpd", "--", "sh", "-c",
		"stat -f -c %T /sys/fs/cgroup; cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us; grep ' /sys/fs/cgroup' /proc/self/mountinfo")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) < 3 || lines[0] != "tmpfs" || lines[1] != "25000" {
		t.Fatalf("inside: exit %d, stdout %q, stderr %q; want a tmpfs at /sys/fs/cgroup, cpu.cfs_quota_us 25000", code, out, errOut)
	}
	inside := map[string][]string{} // mount point: its mountinfo fields
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) > 5 {
			inside[f[4]] = f
		}
	}
	host, err := mountinfo.GetMounts(mountinfo.FSTypeFilter("cgroup"))
	if err != nil || len(host) == 0 {
		t.Fatalf("the host's cgroup v1 mounts: %v (%d)", err, len(host))
	}
	for _, m := range host {
		at := "/sys/fs/cgroup/" + filepath.Base(m.Mountpoint)
		f, ok := inside[at]
		switch {
		case !ok:
			t.Errorf("no mount at %s inside for the host's hierarchy at %s; inside: %q", at, m.Mountpoint, lines[2:])
		case f[3] != cgroup || !strings.HasPrefix(f[5], "ro,") || f[len(f)-3] != "cgroup":
			t.Errorf("%s inside is %q, want the container's cgroup %s, read-only", at, strings.Join(f, " "), cgroup)
		}
	}
}
