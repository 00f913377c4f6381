package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go/features"
	"github.com/podvisor/podvisor/test/prereq"
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

// envRunc names a runc with idmapped mounts (1.2 or later: `make
// runc-new` builds one) that TestUserNamespaces runs as a runtime class on
// containerd 2.x.
const envRunc = "PODVISOR_TEST_RUNC"

// idmapClass is that runtime class's name.
const idmapClass = "idmap"

// idmapPod is a pod with hostUsers: false of runtime class idmapClass
// whose container writes a file in each of its volumes, an emptyDir at
// /data and the host's directory hostDir at /host, and runs until
// stopped.
func idmapPod(name, hostDir string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  hostUsers: false
  runtimeClassName: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "touch /data/made /host/made; sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}, {name: host, mountPath: /host}]
  volumes:
  - {name: data, emptyDir: {}}
  - {name: host, hostPath: {path: %s, type: Directory}}
`, name, idmapClass, hostDir)
}

// builtRunc is $PODVISOR_TEST_RUNC, checked to list idmapped mounts among
// its features; when it is unset or missing, missing says so (for
// prereq.Missing, once the test's other cases ran).
func builtRunc(t *testing.T) (runc, missing string) {
	t.Helper()
	what := "a runc with idmapped mounts, 1.2 or later ($" + envRunc + "; make runc-new builds one)"
	runc = os.Getenv(envRunc)
	if runc == "" {
		return "", what + ": unset"
	}
	if _, err := os.Stat(runc); err != nil {
		return "", what + ": " + err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, runc, "features").Output()
	if err != nil {
		t.Fatalf("$%s: %s features: %v", envRunc, runc, err)
	}
	var f features.Features
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatalf("$%s: %s features: %v", envRunc, runc, err)
	}
	if m := f.Linux; m == nil || m.MountExtensions == nil || m.MountExtensions.IDMap == nil || m.MountExtensions.IDMap.Enabled == nil || !*m.MountExtensions.IDMap.Enabled {
		t.Fatalf("$%s: %s features: mountExtensions.idmap.enabled is not true (runc %s):\n%s", envRunc, runc, f.Annotations["org.opencontainers.runc.version"], out)
	}
	return runc, ""
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
// range). A pod mounting an emptyDir needs idmapped mounts: with a host
// runc that has them the file the container's root makes there is root's
// on the host; with an older runc (Debian 12's 1.1) the pod is refused
// with what is missing. A pod of a runtime class whose runtime is a runc with
// idmapped mounts ($PODVISOR_TEST_RUNC) mounts its volumes, an emptyDir
// and a host directory, idmapped: inside, the host's files show their
// host IDs (0 and 1000, not nobody) and the mounts are idmapped; the
// files the container's root makes are root's on the host, not the
// mapped ID's. On containerd 1.6 every such pod is refused with kubelet's
// reason and containerd's version.
func TestUserNamespaces(t *testing.T) {
	d := newDaemon(t)
	major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(env.ContainerdVersion, "v"), ".", 2)[0])
	var hostDir, noRunc string
	if major >= 2 {
		var runc string
		runc, noRunc = builtRunc(t)
		if runc == "" {
			runc = "runc" // the pod of this class is not made
		}
		config := filepath.Join(d.dir, "podvisor.yaml")
		if err := os.WriteFile(config, []byte(`apiVersion: podvisor.io/v1alpha1
kind: PodvisorConfiguration
runtimeClasses:
  `+idmapClass+`:
    runtimeType: io.containerd.runc.v2
    options:
      BinaryName: `+runc+`
`), 0o644); err != nil {
			t.Fatal(err)
		}
		d.extraArgs = append(d.extraArgs, "--config", config)
		// The host directory: root's, with a file of root's and one of
		// 1000:1000.
		hostDir = filepath.Join(d.dir, "hostvol")
		if err := os.Mkdir(hostDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, id := range map[string]int{"root-file": 0, "user-file": 1000} {
			f := filepath.Join(hostDir, name)
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(f, id, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	d.start()

	if major < 2 {
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
	if noRunc == "" {
		d.writeManifest("une.yaml", idmapPod("une", hostDir))
	}
	if idmap, version := runcIDMap(t); idmap {
		p := d.waitPod("und-"+node, 90*time.Second, "running", running)
		d.checkIDMapped("und", p, map[string]string{"/data/made": emptyDirFile(d, p, "data", "made")})
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

	// The runtime class's runc mounts both volumes idmapped: inside, the
	// host directory's files show the IDs they have on the host.
	if noRunc != "" {
		prereq.Missing(t, noRunc)
	}
	p = d.waitPod("une-"+node, 90*time.Second, "running (runtime class "+idmapClass+")", running)
	if b, ok, why := d.usernsBase("une-" + node); !ok || b < 65536 || b%65536 != 0 {
		t.Errorf("une: user namespace base %d: %s", b, why)
	}
	out, errOut, code := d.runCLI("", "exec", "une-"+node, "--", "stat", "-c", "%n %u %g", "/host/root-file", "/host/user-file")
	if want := "/host/root-file 0 0\n/host/user-file 1000 1000\n"; code != 0 || out != want {
		t.Errorf("une: stat of the host directory's files inside: exit %d, got %q, want %q (host IDs through the idmapped mount)%s", code, out, want, errOut)
	}
	t.Logf("une (runtime class %s): inside, %s", idmapClass, strings.ReplaceAll(strings.TrimSpace(out), "\n", ", "))
	d.checkIDMapped("une", p, map[string]string{
		"/data/made": emptyDirFile(d, p, "data", "made"),
		"/host/made": filepath.Join(hostDir, "made"),
	})
}

// emptyDirFile is the host path of file in pod p's emptyDir volume.
func emptyDirFile(d *daemon, p *v1.Pod, volume, file string) string {
	return filepath.Join(d.state, "pods", string(p.UID), "files", "volumes", "empty-dir", volume, file)
}

// checkIDMapped proves that the files pod p's container made as root
// (files: path inside to path on the host) went through idmapped mounts:
// inside they are 0:0 on an idmapped mount, and on the host the
// container's root wrote root's IDs, not the pod's mapped ones.
func (d *daemon) checkIDMapped(name string, p *v1.Pod, files map[string]string) {
	d.t.Helper()
	for in, host := range files {
		var st unix.Stat_t
		d.poll(name+": "+in+" on the host", 20*time.Second, func() (bool, string) {
			err := unix.Stat(host, &st)
			return err == nil, fmt.Sprint(err)
		})
		if st.Uid != 0 || st.Gid != 0 {
			d.t.Errorf("%s: %s is %d:%d on the host (%s), want 0:0: the container's root writes root's IDs through an idmapped mount", name, in, st.Uid, st.Gid, host)
		}
		out, errOut, code := d.runCLI("", "exec", p.Name, "--", "stat", "-c", "%u %g", in)
		if code != 0 || out != "0 0\n" {
			d.t.Errorf("%s: stat %s inside: exit %d, got %q, want \"0 0\"%s", name, in, code, out, errOut)
		}
		dir := filepath.Dir(in)
		out, errOut, code = d.runCLI("", "exec", p.Name, "--", "grep", " "+dir+" ", "/proc/self/mountinfo")
		if code != 0 || !strings.Contains(out, "idmapped") {
			d.t.Errorf("%s: %s is not an idmapped mount inside: exit %d: %s%s", name, dir, code, out, errOut)
		}
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
