package e2e

import (
	"context"

	"fmt"
	"github.com/podvisor/podvisor/api"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestInvalidEditKeepsPod: a broken edit of a running pod's manifest keeps
// the pod (same container), marks it, and survives a podvisor restart with
// the file still broken; a reformatting edit restarts nothing; a valid new
// version replaces the pod.
func TestInvalidEditKeepsPod(t *testing.T) {
	d := newDaemon(t)
	d.start()
	good := sleeperManifest("app", 1, "sleep 3600")
	d.writeManifest("app.yaml", good)
	const name = "app-" + node
	p := d.waitPod(name, 60*time.Second, "Running", running)
	id, uid := containerID(p, "main"), p.UID

	d.writeManifest("app.yaml", strings.Replace(good, "containers:", "containers: [", 1))
	p = d.waitPod(name, 20*time.Second, "marked with the manifest error", func(p *v1.Pod) bool {
		return p.Annotations["podvisor.io/manifest-error"] != ""
	})
	if containerID(p, "main") != id || p.UID != uid {
		t.Fatalf("broken edit changed the pod: container %s -> %s", id, containerID(p, "main"))
	}

	// podvisor restarts with the file still broken: the pod keeps running.
	d.stop(syscall.SIGTERM)
	d.start()
	p = d.waitPod(name, 20*time.Second, "adopted, still marked", func(p *v1.Pod) bool {
		return running(p) && p.Annotations["podvisor.io/manifest-error"] != ""
	})
	if containerID(p, "main") != id {
		t.Fatalf("restart with a broken file replaced the container: %s -> %s", id, containerID(p, "main"))
	}
	// Events survive the restart: the Started event of the first run and
	// the InvalidManifest warning are still listed.
	evs, err := api.NewClient(d.sock).Events(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var started, invalid bool
	for _, e := range evs.Items {
		started = started || (e.Reason == "Started" && e.InvolvedObject.UID == uid)
		invalid = invalid || (e.Reason == "InvalidManifest" && e.InvolvedObject.UID == uid)
	}
	if !started || !invalid {
		t.Errorf("after restart: Started event %v, InvalidManifest event %v", started, invalid)
	}

	// Same meaning, other formatting: nothing restarts, the mark goes.
	reformatted := `# reformatted by hand
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "app"},
 "spec": {"terminationGracePeriodSeconds": 1,
  "containers": [{"command": ["sh", "-c", "sleep 3600"], "imagePullPolicy": "IfNotPresent",
                  "image": "busybox", "name": "main"}]}}
`
	d.writeManifest("app.yaml", reformatted)
	p = d.waitPod(name, 20*time.Second, "unmarked", func(p *v1.Pod) bool {
		return running(p) && p.Annotations["podvisor.io/manifest-error"] == ""
	})
	if containerID(p, "main") != id || p.UID != uid {
		t.Fatalf("reformatting restarted the pod: uid %s -> %s, container %s -> %s", uid, p.UID, id, containerID(p, "main"))
	}

	// A real change replaces the pod: a new UID, a new container.
	d.writeManifest("app.yaml", sleeperManifest("app", 1, "sleep 3601"))
	p = d.waitPod(name, 30*time.Second, "replaced", func(p *v1.Pod) bool { return running(p) && p.UID != uid })
	if containerID(p, "main") == id {
		t.Fatal("changed pod kept its container")
	}
}

// TestHalfWrittenManifest: a file written in two halves a second apart
// becomes a pod only once it is complete.
func TestHalfWrittenManifest(t *testing.T) {
	d := newDaemon(t)
	d.start()
	content := sleeperManifest("slow", 1, "sleep 3600")
	// The first half is a complete, valid pod on its own (it only lacks
	// the command), so reading it early would run the wrong pod.
	cut := strings.Index(content, "    command:")
	f, err := os.OpenFile(filepath.Join(d.manifests, "slow.yaml"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content[:cut]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if _, err := d.pod("slow-" + node); err == nil {
			f.Close()
			t.Fatal("a half-written manifest became a pod")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := f.WriteString(content[cut:]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	p := d.waitPod("slow-"+node, 60*time.Second, "Running", running)
	if cmd := p.Spec.Containers[0].Command; len(cmd) != 3 || cmd[2] != "sleep 3600" {
		t.Fatalf("pod runs %q", cmd)
	}
}

// TestJunkFilesNeverPods: editor and package-manager leftovers, dotfiles
// and sub-directories are never pods, even with valid pod content.
func TestJunkFilesNeverPods(t *testing.T) {
	d := newDaemon(t)
	d.start()
	junk := []string{".app.yaml", "app.yaml~", ".app.yaml.swp", "app.yaml.bak", "app.yaml.orig", "app.tmp",
		"app.yaml.dpkg-new", "app.yaml.rpmnew", "4913", "app.txt"}
	for i, n := range junk {
		os.WriteFile(filepath.Join(d.manifests, n), []byte(sleeperManifest(fmt.Sprintf("junk%d", i), 1, "sleep 3600")), 0o644)
	}
	os.MkdirAll(filepath.Join(d.manifests, "sub"), 0o755)
	os.WriteFile(filepath.Join(d.manifests, "sub", "pod.yaml"), []byte(sleeperManifest("sub", 1, "sleep 3600")), 0o644)
	// A real manifest written last: once it runs, the junk was seen too.
	d.writeManifest("real.yaml", sleeperManifest("real", 1, "sleep 3600"))
	d.waitPod("real-"+node, 60*time.Second, "Running", running)
	pods, err := statusPods(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 {
		t.Fatalf("pods: %v", pods)
	}
}

// TestDuplicates: two files naming one pod: the running one keeps running
// and the newer file is rejected naming both; removing the winner promotes
// the other.
func TestDuplicates(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("b.yaml", sleeperManifest("dup", 1, "sleep 3600"))
	p := d.waitPod("dup-"+node, 60*time.Second, "Running", running)
	first := p.UID
	// a.yaml sorts first but arrives second: b.yaml keeps running.
	d.writeManifest("a.yaml", sleeperManifest("dup", 1, "sleep 3601"))
	d.waitLogLine("a.yaml", "b.yaml") // the duplicate error names both files
	p = d.waitPod("dup-"+node, 5*time.Second, "still the first", running)
	if p.UID != first {
		t.Fatalf("the newer duplicate replaced the running pod")
	}
	d.removeManifest("b.yaml")
	d.waitPod("dup-"+node, 30*time.Second, "promoted a.yaml", func(p *v1.Pod) bool {
		return running(p) && p.UID != first && strings.HasSuffix(p.Annotations["podvisor.io/manifest-path"], "a.yaml")
	})
}

// TestRapidRewrites: many rewrites in a row, while the pod is starting and
// terminating, converge on the last version, and one pod runs.
func TestRapidRewrites(t *testing.T) {
	d := newDaemon(t)
	d.start()
	for i := 0; i < 6; i++ {
		d.writeManifest("churn.yaml", sleeperManifest("churn", 1, fmt.Sprintf("sleep %d", 3600+i)))
		time.Sleep(30 * time.Millisecond) // a burst of edits, not a synchronisation
	}
	p := d.waitPod("churn-"+node, 90*time.Second, "running the last version", func(p *v1.Pod) bool {
		return running(p) && p.Spec.Containers[0].Command[2] == "sleep 3605"
	})
	d.poll("only the last version's container left", 30*time.Second, func() (bool, string) {
		ids := d.containers()
		return len(ids) == 1 && ids[0] == containerID(p, "main"), strings.Join(ids, " ")
	})
}
