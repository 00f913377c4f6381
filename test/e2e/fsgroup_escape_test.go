package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// escapePod keeps swapping, inside its emptyDir, files it made (0777) with
// symlinks to a host file, and directories with symlinks to a host
// directory, each pair in a loop of its own, behind many other files so
// that a walk of the volume lists the swapped names long before it
// reaches them. The first loop counts its rounds in /scratch/rounds. The
// host paths are only names to it: nothing of the host is mounted in.
const escapePod = `apiVersion: v1
kind: Pod
metadata: {name: escape}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {fsGroup: 2000}
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command:
    - sh
    - -c
    - |
      trap 'exit 0' TERM
      cd /scratch
      i=0; while [ $i -lt 2000 ]; do : > a$i; i=$((i+1)); done
      files() {
        : > zf$1; chmod 777 zf$1
        while true; do
          ln -s %[1]s zl$1; mv -f zl$1 zf$1
          : > zn$1; chmod 777 zn$1; mv -f zn$1 zf$1
          [ -z "$2" ] || { n=$((n+1)); echo $n > rounds; }
        done
      }
      dirs() {
        mkdir zd$1
        while true; do mv zd$1 zs$1; ln -s %[2]s zd$1; rm zd$1; mv zs$1 zd$1; done
      }
      n=0
      dirs 0 & dirs 1 & files 1 &
      files 0 count
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
  volumes:
  - name: scratch
    emptyDir: {}
`

// TestFSGroupEscape: a pod with a fsGroup whose container races podvisor
// by swapping its own file and directory in its emptyDir for symlinks to
// a host file and a host directory, while podvisor restarts five times
// (each restart sets the pod's volumes up again, the container running).
// The host file and the host tree keep their modes, owners and groups;
// the emptyDir root, seen from inside the container, still has the
// fsGroup's group and setgid.
func TestFSGroupEscape(t *testing.T) {
	t.Parallel()
	host := t.TempDir()
	hostFile := filepath.Join(host, "secret")
	hostDir := filepath.Join(host, "tree")
	want := map[string]string{
		hostFile:                           "600 0:0",
		hostDir:                            "700 0:0",
		filepath.Join(hostDir, "sub"):      "700 0:0",
		filepath.Join(hostDir, "sub", "f"): "600 0:0",
	}
	for _, err := range []error{
		os.WriteFile(hostFile, []byte("host"), 0o600),
		os.MkdirAll(filepath.Join(hostDir, "sub"), 0o700),
		os.WriteFile(filepath.Join(hostDir, "sub", "f"), []byte("host"), 0o600),
		os.Chmod(hostDir, 0o700),
		os.Chmod(filepath.Join(hostDir, "sub"), 0o700),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for p := range want {
		if err := os.Lchown(p, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	hostState := func() map[string]string {
		got := map[string]string{}
		for p := range want {
			var st syscall.Stat_t
			if err := syscall.Lstat(p, &st); err != nil {
				got[p] = err.Error()
				continue
			}
			got[p] = fmt.Sprintf("%o %d:%d", st.Mode&0o7777, st.Uid, st.Gid)
		}
		return got
	}
	checkHost := func(when string) {
		t.Helper()
		var changed []string
		for p, s := range hostState() {
			if s != want[p] {
				changed = append(changed, fmt.Sprintf("%s is %s, want %s", p, s, want[p]))
			}
		}
		if len(changed) > 0 {
			sort.Strings(changed)
			t.Fatalf("%s: the host changed:\n  %s", when, strings.Join(changed, "\n  "))
		}
	}
	checkHost("before the pod")

	d := newDaemon(t)
	d.start()
	d.writeManifest("escape.yaml", fmt.Sprintf(escapePod, hostFile, hostDir))
	pod := "escape-" + node
	p := d.waitPod(pod, 60*time.Second, "Running", running)
	id := containerID(p, "main")
	files := filepath.Join(d.state, "pods", string(p.UID), "files")
	rounds := func() int {
		b, _ := os.ReadFile(filepath.Join(files, "volumes", "empty-dir", "scratch", "rounds"))
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	// swapping waits until the container's first loop has made 20 more
	// rounds: it swapped while and after podvisor set the volumes up.
	swapping := func(what string) {
		t.Helper()
		from := rounds()
		d.poll(what, 30*time.Second, func() (bool, string) {
			n := rounds()
			return n >= from+20, fmt.Sprintf("%d rounds, from %d", n, from)
		})
	}
	swapping("the container to swap")

	for i := range 5 {
		d.stop(syscall.SIGTERM)
		off := d.logSize()
		d.start()
		// The restarted podvisor set the pod's volumes up again.
		d.poll(fmt.Sprintf("restart %d: the pod's sandbox prepared again", i+1), 30*time.Second, func() (bool, string) {
			return d.logHasLine(off, "prepare sandbox", pod), "not logged"
		})
		p = d.waitPod(pod, 30*time.Second, "Running", running)
		if got := containerID(p, "main"); got != id || containerStatus(p, "main").RestartCount != 0 {
			t.Fatalf("restart %d: the container was restarted (%s → %s)", i+1, id, got)
		}
		swapping(fmt.Sprintf("restart %d: the container to keep swapping", i+1))
		checkHost(fmt.Sprintf("restart %d", i+1))
	}

	if out := strings.TrimSpace(d.sh(pod, `stat -c '%g %a' /scratch`)); out != "2000 2777" {
		t.Errorf("the emptyDir root seen in the container: %q, want \"2000 2777\" (the fsGroup's group, rwx for all, setgid)", out)
	}
	if _, err := os.Stat(filepath.Join(files, "volumes", "empty-dir-ready", "scratch")); err != nil {
		t.Errorf("the emptyDir's ready marker: %v", err)
	}
}
