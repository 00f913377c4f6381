package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	v1 "k8s.io/api/core/v1"
)

// asNobody runs a command from the host as user and group nobody, without
// supplementary groups, as `setpriv` does for an admin checking access.
func asNobody(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups"}, args...)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run setpriv (util-linux) as nobody: %v", err)
	}
	return string(out), err
}

// requireDenied: nobody may enter outer but not inner, so inner's own mode
// is what keeps other users out.
func requireDenied(t *testing.T, outer, inner string) {
	t.Helper()
	if out, err := asNobody(t, "ls", outer); err != nil {
		t.Fatalf("nobody cannot list %s, so the check of %s proves nothing: %v\n%s", outer, inner, err, out)
	}
	out, err := asNobody(t, "ls", inner)
	if err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("nobody listing %s: %v %q, want permission denied", inner, err, out)
	}
}

func permOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// linkBinary makes podvisor's binary runnable by nobody: the build
// directory is 0700.
func linkBinary(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(dir, "podvisor-cli")
	if err := os.Link(podvisorBin, dst); err == nil {
		return dst
	}
	src, err := os.Open(podvisorBin)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, src); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestPrivateFiles: what podvisor keeps for its pods is root's only. The
// run and state dirs it creates, each sandbox directory (namespace files
// and the /dev/shm tmpfs) and each pod directory are 0700, and each one
// alone keeps another user out; the API socket refuses another user even
// in a run dir that lets it in.
func TestPrivateFiles(t *testing.T) {
	d := newDaemon(t)
	// The test's temp dir is 0700: open it so that only the modes podvisor
	// chooses stand between nobody and its files.
	if err := os.Chmod(d.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cli := linkBinary(t, d.dir)
	// podvisor run with a umask of 0 (a unit file's UMask=0000): every mode
	// below is podvisor's choice, none the umask's.
	func() {
		defer syscall.Umask(syscall.Umask(0))
		d.start()
	}()
	// A non-root container still uses everything kept under those 0700
	// directories: runc, as root, makes its mounts.
	d.writeManifest("private.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: private
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 1000, runAsGroup: 1000}
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "set -e; echo private > /dev/shm/mark; echo cache > /cache/x; echo sub > /sub/y; cat /etc/hosts /etc/resolv.conf /etc/hostname > /dev/null; echo ok > /dev/termination-log; echo ready > /cache/ready; sleep 3600"]
    volumeMounts:
    - {name: cache, mountPath: /cache}
    - {name: cache, mountPath: /sub, subPath: sub}
  volumes:
  - name: cache
    emptyDir: {}
`)
	p := d.waitPod("private-"+node, 60*time.Second, "Running", running)
	uid := string(p.UID)
	files := filepath.Join(d.state, "pods", uid, "files")
	cache := filepath.Join(files, "volumes", "empty-dir", "cache")
	d.poll("the non-root container to write its files", 20*time.Second, func() (bool, string) {
		_, err := os.Stat(filepath.Join(cache, "ready"))
		return err == nil, fmt.Sprint(err)
	})
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.taskPID(containerID(p, "main"))))
	if err != nil || !strings.Contains(string(status), "\nUid:\t1000\t1000\t1000\t1000\n") {
		t.Fatalf("the container does not run as uid 1000: %v\n%s", err, status)
	}
	if b, err := os.ReadFile(filepath.Join(cache, "sub", "y")); err != nil || string(b) != "sub\n" {
		t.Errorf("the subPath the container wrote: %q %v", b, err)
	}

	entries, err := os.ReadDir(filepath.Join(d.run, "pods"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("sandboxes under the run dir: %v %v, want one", entries, err)
	}
	sandbox := filepath.Join(d.run, "pods", entries[0].Name())
	shm := filepath.Join(sandbox, "shm")
	// Root sees what the container wrote to its /dev/shm: the path is the
	// pod's shm, not an empty directory.
	if b, err := os.ReadFile(filepath.Join(shm, "mark")); err != nil || string(b) != "private\n" {
		t.Fatalf("pod's /dev/shm on the host: %q %v", b, err)
	}

	chains := map[string][]string{
		"run":   {d.run, filepath.Join(d.run, "pods"), sandbox},
		"state": {d.state, filepath.Join(d.state, "pods"), filepath.Join(d.state, "pods", uid), files},
	}
	for name, chain := range chains {
		t.Run(name, func(t *testing.T) {
			for _, dir := range chain {
				if got := permOf(t, dir); got != 0o700 {
					t.Errorf("%s mode = %v, want 0700", dir, got)
				}
			}
			// From the outside in: each directory holds nobody back on its
			// own; then it is opened, as an older podvisor or an admin might
			// have left it, and the next one must hold.
			outer := d.dir
			for _, dir := range chain {
				inner := dir
				if dir == sandbox {
					inner = shm // the pod's /dev/shm, as an admin would try it
				}
				requireDenied(t, outer, inner)
				if err := os.Chmod(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				outer = dir
			}
		})
	}

	// In a run dir that lets nobody in, the socket's own mode refuses it.
	if err := os.Chmod(d.run, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := asNobody(t, cli, "get", "pods", "--socket", d.sock)
	if err == nil || !strings.Contains(out, "permission denied") {
		t.Errorf("nobody running `podvisor get pods`: %v %q, want permission denied", err, out)
	}
	if got := permOf(t, d.sock); got != 0o600 {
		t.Errorf("socket mode = %v, want 0600", got)
	}
	if err := api.NewClient(d.sock).Healthz(context.Background()); err != nil {
		t.Errorf("root cannot use the API: %v", err)
	}
}

// TestSubPathEscape: a subPath whose path is a symlink out of its hostPath
// volume (or goes through one) fails that container's creation with
// CreateContainerConfigError and an event, and nothing outside the volume
// is mounted anywhere; good subPaths of the same volume (a file, a
// directory, one created) are mounted from inside it, read in the running
// container, and their staging mounts go with the pod.
func TestSubPathEscape(t *testing.T) {
	d := newDaemon(t)
	host := filepath.Join(d.dir, "host")
	outside := filepath.Join(d.dir, "outside")
	for _, dir := range []string{filepath.Join(host, "conf"), filepath.Join(host, "data"), filepath.Join(outside, "inner")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, content := range map[string]string{
		filepath.Join(host, "conf", "app.conf"):   "hello\n",
		filepath.Join(host, "data", "x"):          "x\n",
		filepath.Join(outside, "secret"):          "secret\n",
		filepath.Join(outside, "inner", "secret"): "secret\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(host, "escape")); err != nil {
		t.Fatal(err)
	}
	d.start()
	d.writeManifest("subpath.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: subpath
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: ok
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: host, mountPath: /etc/app.conf, subPath: conf/app.conf, readOnly: true}
    - {name: host, mountPath: /data, subPath: data}
    - {name: host, mountPath: /made, subPath: new/dir}
  - name: leaf
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: host, mountPath: /stolen, subPath: escape}
  - name: parent
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: host, mountPath: /stolen, subPath: escape/inner}
  volumes:
  - name: host
    hostPath: {path: %s, type: Directory}
`, host))
	const name = "subpath-" + node
	refused := func(p *v1.Pod, c string) bool {
		w := containerStatus(p, c).State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError"
	}
	p := d.waitPod(name, 60*time.Second, "ok running, leaf and parent refused", func(p *v1.Pod) bool {
		return containerStatus(p, "ok").State.Running != nil && refused(p, "leaf") && refused(p, "parent")
	})

	for _, c := range []string{"leaf", "parent"} {
		cs := containerStatus(p, c)
		if !strings.Contains(cs.State.Waiting.Message, "leads outside the volume") {
			t.Errorf("%s: waiting message %q, want it to say the subPath leads outside the volume", c, cs.State.Waiting.Message)
		}
		if cs.ContainerID != "" {
			t.Errorf("%s: a container %s was made", c, cs.ContainerID)
		}
	}
	evs, err := api.NewClient(d.sock).Events(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{}
	for _, e := range evs.Items {
		if e.Type == v1.EventTypeWarning && e.Reason == "Failed" && strings.Contains(e.Message, "leads outside the volume") {
			failed[e.InvolvedObject.FieldPath] = true
		}
	}
	for _, fp := range []string{"spec.containers{leaf}", "spec.containers{parent}"} {
		if !failed[fp] {
			t.Errorf("no Failed warning event for %s in %v", fp, failed)
		}
	}

	// Nothing mounted on the host shows the outside directory.
	files := filepath.Join(d.state, "pods", string(p.UID), "files")
	for _, mp := range mountsUnder(d.dir) {
		for _, o := range []string{outside, filepath.Join(outside, "inner")} {
			if sameInode(mp, o) {
				t.Errorf("%s mounts %s, outside the volume", mp, o)
			}
		}
	}
	for _, c := range []string{"leaf", "parent"} {
		if _, err := os.Lstat(filepath.Join(files, "volume-subpaths", "host", c)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("staging for the refused %s: %v", c, err)
		}
	}

	// The good subPaths, from inside the running container.
	root := fmt.Sprintf("/proc/%d/root", d.taskPID(containerID(p, "ok")))
	if b, err := os.ReadFile(root + "/etc/app.conf"); err != nil || string(b) != "hello\n" {
		t.Errorf("/etc/app.conf in the container: %q %v", b, err)
	}
	if b, err := os.ReadFile(root + "/data/x"); err != nil || string(b) != "x\n" {
		t.Errorf("/data/x in the container: %q %v", b, err)
	}
	if err := os.WriteFile(root+"/made/y", []byte("y\n"), 0o644); err != nil {
		t.Errorf("write to the created subPath: %v", err)
	} else if b, err := os.ReadFile(filepath.Join(host, "new", "dir", "y")); err != nil || string(b) != "y\n" {
		t.Errorf("the created subPath is not the volume's new/dir: %q %v", b, err)
	}
	if n := len(mountsUnder(filepath.Join(files, "volume-subpaths"))); n != 3 {
		t.Errorf("%d staging mounts, want 3", n)
	}

	// Removing the pod removes its staging mounts and keeps the volume's
	// data.
	d.removeManifest("subpath.yaml")
	d.waitGone(name, 30*time.Second)
	d.poll("pod files to be gone", 10*time.Second, func() (bool, string) {
		ms := mountsUnder(d.state)
		_, err := os.Stat(files)
		return len(ms) == 0 && errors.Is(err, os.ErrNotExist), fmt.Sprintf("mounts %v, files dir %v", ms, err)
	})
	for _, f := range []string{filepath.Join(host, "conf", "app.conf"), filepath.Join(host, "data", "x"), filepath.Join(host, "new", "dir", "y"), filepath.Join(outside, "secret")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("volume data lost with the pod: %v", err)
		}
	}
}

func sameInode(a, b string) bool {
	var sa, sb syscall.Stat_t
	return syscall.Stat(a, &sa) == nil && syscall.Stat(b, &sb) == nil && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}
