package e2e

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// usernsPod is a pod with hostUsers: false whose container runs until
// /tmp/stop exists, then exits 1 (restarted: restartPolicy Always).
func usernsPod(name, volume string) string {
	vm, vs := "", ""
	if volume != "" {
		vm = "    volumeMounts: [{name: data, mountPath: /data}]\n"
		vs = "  volumes:\n  - name: data\n    " + volume + "\n"
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  hostUsers: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "touch /rootfile; [ -d /data ] && touch /data/made; while [ ! -e /tmp/stop ]; do sleep 0.2; done; exit 1"]
%s%s`, name, vm, vs)
}

var uidMapLine = regexp.MustCompile(`^\s*0\s+(\d+)\s+65536\s*$`)

// usernsBase reads the container's /proc/self/uid_map and gid_map: one
// line each, "0 <base> 65536" with the same base.
func (d *daemon) usernsBase(pod string) (uint32, bool, string) {
	out, errOut, code := d.runCLI("", "exec", pod, "--", "sh", "-c", "cat /proc/self/uid_map; cat /proc/self/gid_map")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 {
		return 0, false, fmt.Sprintf("exit %d: %s%s", code, out, errOut)
	}
	u, g := uidMapLine.FindStringSubmatch(lines[0]), uidMapLine.FindStringSubmatch(lines[1])
	if u == nil || g == nil || u[1] != g[1] {
		return 0, false, "uid_map/gid_map: " + out
	}
	b, _ := strconv.ParseUint(u[1], 10, 32)
	return uint32(b), true, ""
}

// runcIDMap tells whether the host's runc makes idmapped mounts (1.2 and
// later list them among its features).
func runcIDMap(t *testing.T) (bool, string) {
	out, err := exec.Command("runc", "features").Output()
	if err != nil {
		t.Fatalf("runc features: %v", err)
	}
	v, _ := exec.Command("runc", "--version").Output()
	return strings.Contains(string(out), `"idmap"`), strings.Fields(string(v) + " ? ?")[2]
}

// TestUserNamespaces proves hostUsers: false as kubelet with containerd's
// CRI gives it. On containerd 2.x: the container is root in a user
// namespace of its own ("0 <base> 65536", base a multiple of 65536 from
// 65536 up), its files are owned on the host by the mapped ID, the pod's
// network namespace is owned by its user namespace, two pods get
// disjoint ranges, and a podvisor restart keeps a pod's range (a
// container restarted after it maps the same IDs, a new pod gets another
// range). A pod mounting an emptyDir needs idmapped mounts: with a runc
// that has them the file the container makes there is owned by the
// container's ID on the host; with an older runc the pod is refused with
// what is missing. On containerd 1.6 every such pod is refused with
// kubelet's reason and containerd's version.
func TestUserNamespaces(t *testing.T) {
	d := newDaemon(t)
	d.start()

	if major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(env.ContainerdVersion, "v"), ".", 2)[0]); major < 2 {
		d.writeManifest("un.yaml", usernsPod("un", ""))
		want := "can't set `spec.hostUsers: false`, runtime does not support user namespaces: containerd " + env.ContainerdVersion + " cannot map the image's files to the pod's IDs (containerd 2.0 or later can)"
		d.poll("FailedCreatePodSandBox with the reason", 60*time.Second, func() (bool, string) {
			n, msgs := d.eventCount("un-"+node, "FailedCreatePodSandBox", want)
			return n > 0, strings.Join(msgs, "\n")
		})
		d.waitPod("un-"+node, 10*time.Second, "waiting in ContainerCreating", func(p *v1.Pod) bool {
			return waitingReason(p, "main") == "ContainerCreating"
		})
		return
	}

	// Two pods: root inside, each its own range.
	bases := map[string]uint32{}
	for _, name := range []string{"una", "unb"} {
		d.writeManifest(name+".yaml", usernsPod(name, ""))
	}
	for _, name := range []string{"una", "unb"} {
		p := d.waitPod(name+"-"+node, 90*time.Second, "running", running)
		out, errOut, code := d.runCLI("", "exec", name+"-"+node, "--", "id")
		if code != 0 || !strings.HasPrefix(out, "uid=0(root) gid=0(root)") {
			t.Errorf("%s: id: exit %d: %s%s", name, code, out, errOut)
		}
		base, ok, why := d.usernsBase(name + "-" + node)
		if !ok {
			t.Fatalf("%s: %s", name, why)
		}
		if base < 65536 || base%65536 != 0 {
			t.Errorf("%s: user namespace base %d is not a multiple of 65536 from 65536 up", name, base)
		}
		bases[name] = base

		// On the host: the file the container made in its root is the
		// mapped ID's, and the pod's network namespace is its user
		// namespace's.
		pid := d.taskPID(containerID(p, "main"))
		var st unix.Stat_t
		d.poll(name+": /rootfile on the host", 20*time.Second, func() (bool, string) {
			err := unix.Stat(fmt.Sprintf("/proc/%d/root/rootfile", pid), &st)
			return err == nil, fmt.Sprint(err)
		})
		if st.Uid != base || st.Gid != base {
			t.Errorf("%s: /rootfile is %d:%d on the host, want the mapped root %d:%d", name, st.Uid, st.Gid, base, base)
		}
		if own, net := nsInode(t, fmt.Sprintf("/proc/%d/ns/user", pid)), netOwner(t, fmt.Sprintf("/proc/%d/ns/net", pid)); own != net {
			t.Errorf("%s: the network namespace is owned by user namespace %d, not the pod's %d", name, net, own)
		}
	}
	t.Logf("user namespace ranges: una from %d, unb from %d", bases["una"], bases["unb"])
	if bases["una"] == bases["unb"] {
		t.Fatalf("two pods share the user namespace range %d", bases["una"])
	}

	// A podvisor restart keeps the range: una's container, restarted after
	// it, maps the same IDs; a new pod gets a range of its own.
	d.stop(syscall.SIGTERM)
	d.start()
	p := d.waitPod("una-"+node, 60*time.Second, "running", running)
	if _, errOut, code := d.runCLI("", "exec", "una-"+node, "--", "touch", "/tmp/stop"); code != 0 {
		t.Fatalf("exec touch /tmp/stop: %s", errOut)
	}
	before := containerID(p, "main")
	d.waitPod("una-"+node, 90*time.Second, "restarted", func(p *v1.Pod) bool {
		return running(p) && containerID(p, "main") != before && containerStatus(p, "main").RestartCount == 1
	})
	var again uint32
	d.poll("una's range after the restart", 20*time.Second, func() (bool, string) {
		b, ok, why := d.usernsBase("una-" + node)
		again = b
		return ok, why
	})
	if again != bases["una"] {
		t.Errorf("una maps %d after podvisor's restart, %d before", again, bases["una"])
	}
	d.writeManifest("unc.yaml", usernsPod("unc", ""))
	d.waitPod("unc-"+node, 90*time.Second, "running", running)
	if c, ok, why := d.usernsBase("unc-" + node); !ok || c == bases["una"] || c == bases["unb"] {
		t.Errorf("a pod made after the restart maps %d (%s); una has %d, unb %d", c, why, bases["una"], bases["unb"])
	}

	// A volume: idmapped when runc can, else refused with what is missing.
	d.writeManifest("und.yaml", usernsPod("und", "emptyDir: {}"))
	if idmap, version := runcIDMap(t); idmap {
		p := d.waitPod("und-"+node, 90*time.Second, "running", running)
		pid := d.taskPID(containerID(p, "main"))
		var st unix.Stat_t
		d.poll("/data/made on the host", 20*time.Second, func() (bool, string) {
			err := unix.Stat(fmt.Sprintf("/proc/%d/root/data/made", pid), &st)
			return err == nil, fmt.Sprint(err)
		})
		// Through the idmapped mount the container's root writes the
		// host's root IDs: the volume keeps the IDs the container sees.
		if st.Uid != 0 || st.Gid != 0 {
			t.Errorf("/data/made is %d:%d on the host, want 0:0 through the idmapped mount", st.Uid, st.Gid)
		}
	} else {
		want := "can't set `spec.hostUsers: false`, volume \"data\" of container \"main\" cannot be mounted in the pod's user namespace: runc " + version + " cannot make idmapped mounts (runc 1.2 or later can)"
		t.Logf("runc %s has no idmapped mounts: want the refusal %q", version, want)
		d.poll("FailedCreatePodSandBox with the reason", 60*time.Second, func() (bool, string) {
			n, msgs := d.eventCount("und-"+node, "FailedCreatePodSandBox", want)
			return n > 0, strings.Join(msgs, "\n")
		})
		d.waitPod("und-"+node, 10*time.Second, "waiting in ContainerCreating", func(p *v1.Pod) bool {
			return waitingReason(p, "main") == "ContainerCreating"
		})
	}
}

// netOwner is the inode of the user namespace that owns the namespace at
// path.
func netOwner(t *testing.T, path string) uint64 {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	owner, err := unix.IoctlRetInt(fd, unix.NS_GET_USERNS)
	if err != nil {
		t.Fatalf("owner of %s: %v", path, err)
	}
	defer unix.Close(owner)
	var st unix.Stat_t
	if err := unix.Fstat(owner, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}
