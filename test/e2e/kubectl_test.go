package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

const habitsManifest = `apiVersion: v1
kind: Pod
metadata:
  name: habits
  labels: {app: habits}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: busybox, imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo hello from main; exec sleep 3600"]}
  - {name: side, image: busybox, imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo hello from side; exec sleep 3600"]}
`

// The container's termination message clears the screen, if printed raw.
const boomManifest = `apiVersion: v1
kind: Pod
metadata:
  name: boom
  namespace: kube-system
  labels: {tier: boom}
spec:
  restartPolicy: Never
  containers:
  - {name: boom, image: busybox, imagePullPolicy: IfNotPresent, command: ["sh", "-c", "printf '\\033[2Jboom' > /dev/termination-log; exit 1"]}
`

// TestKubectlHabits: a kubectl user's habits work against a running
// podvisor, and a container's escape sequences reach no terminal.
func TestKubectlHabits(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("habits.yaml", habitsManifest)
	d.writeManifest("boom.yaml", boomManifest)
	const habits, boom = "habits-" + node, "boom-" + node
	hp := d.waitPod(habits, 90*time.Second, "both containers running", allRunning)
	d.waitPod("kube-system/"+boom, 90*time.Second, "boom terminated", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
	})
	run := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, code := d.runCLI("", args...)
		if code != 0 {
			t.Errorf("podvisor %q: exit %d, stderr %q", args, code, errOut)
		}
		return out, errOut
	}
	check := func(what string, ok bool, out string) {
		t.Helper()
		if !ok {
			t.Errorf("%s:\n%s", what, out)
		}
	}

	out, _ := run("get", "pods", "-A")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	check("get pods -A: a NAMESPACE column", len(lines) == 3 && strings.HasPrefix(lines[0], "NAMESPACE ") &&
		strings.HasPrefix(lines[1], "default ") && strings.HasPrefix(lines[2], "kube-system ") && strings.Contains(lines[2], boom), out)
	out, _ = run("get", "pods", "-n", "kube-system", "-o", "name")
	check("get pods -n kube-system -o name", out == "pod/"+boom+"\n", out)
	out, _ = run("get", "pods", "-l", "app=habits", "-o", "name")
	check("get pods -l app=habits -o name", out == "pod/"+habits+"\n", out)
	out, _ = run("get", "pod/habits", "-o", "json")
	var pod v1.Pod
	check("get pod/habits -o json: the Pod", json.Unmarshal([]byte(out), &pod) == nil && pod.Kind == "Pod" && pod.Name == habits, out)
	out, _ = run("get", "pods", "habits", "-o", "jsonpath={.status.podIP}")
	check("-o jsonpath={.status.podIP}", out == hp.Status.PodIP && out != "", out)

	out, errOut := run("logs", "habits", "side")
	check("logs POD CONTAINER", out == "hello from side\n" && errOut == "", out+errOut)
	out, errOut = run("logs", "pod/habits")
	check("logs of a two-container pod: the first, said on stderr", out == "hello from main\n" &&
		errOut == `Defaulted container "main" out of: main, side`+"\n", out+errOut)

	out, _ = run("describe", "pod")
	check("describe pod: every pod", strings.Count(out, "\nName:") == 1 && strings.HasPrefix(out, "Name:") &&
		strings.Contains(out, habits) && strings.Contains(out, boom), out)
	check("describe: the termination message escaped", strings.Contains(out, `\x1b[2Jboom`) && !strings.Contains(out, "\x1b"), out)
	out, _ = run("get", "pods", "-n", "kube-system", "--no-headers",
		"-o", "custom-columns=MSG:.status.containerStatuses[0].state.terminated.message")
	check("custom-columns: the termination message escaped", out == `\x1b[2Jboom`+"\n", out)

	out, _ = run("top", "pod", "--containers", "--interval", "500ms")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	check("top pod --containers", len(lines) == 3 && strings.Fields(lines[0])[0] == "POD" && strings.Fields(lines[0])[1] == "NAME" &&
		strings.HasPrefix(lines[1], habits+"   main ") && strings.HasPrefix(lines[2], habits+"   side ") && strings.HasSuffix(lines[1], "Mi"), out)

	out, _ = run("images")
	check("images: crictl's columns", strings.HasPrefix(out, "IMAGE ") && strings.Contains(out, "IMAGE ID") && strings.Contains(out, "busybox"), out)
	out, _ = run("images", "-q")
	check("images -q: IDs", strings.HasPrefix(out, "sha256:"), out)
	out, _ = run("ps")
	check("ps: the running containers", strings.HasPrefix(out, "CONTAINER ") && len(linesOf2(out, "main", habits, "Running")) == 1 &&
		len(linesOf2(out, "side", habits)) == 1 && !strings.Contains(out, boom), out)
	out, _ = run("ps", "-a")
	check("ps -a: the exited one too", len(linesOf2(out, "boom", "Exited")) == 1, out)

	out, _ = run("version")
	check("version: client and server", strings.HasPrefix(out, "Client Version: ") && strings.Contains(out, "\nServer Version: ") &&
		strings.Contains(out, "\nServer Go Version: go") && strings.Contains(out, "\nContainerd Version: "), out)

	b, err := exec.Command("bash", "-c", "source <("+podvisorBin+" completion bash) && complete -p podvisor").CombinedOutput()
	check("the bash completion script loads", err == nil && strings.Contains(string(b), "podvisor"), string(b))
}

// linesOf2 returns the lines of s that contain every one of words.
func linesOf2(s string, words ...string) []string {
	var got []string
	for _, l := range strings.Split(s, "\n") {
		if countLines([]string{l}, words...) == 1 {
			got = append(got, l)
		}
	}
	return got
}
