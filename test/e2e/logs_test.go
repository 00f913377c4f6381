package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/test/syncbuf"
	v1 "k8s.io/api/core/v1"
)

// logsCmd runs `podvisor logs` against the daemon and returns its stdout,
// stderr and exit code.
func (d *daemon) logsCmd(args ...string) (string, string, int) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, podvisorBin, append([]string{"logs", "--socket", d.sock}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		d.t.Fatalf("podvisor logs %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// readCount reads the number a container keeps in a file; it rewrites the
// file in place, so a read can find it empty.
func (d *daemon) readCount(path string) int {
	d.t.Helper()
	var n int
	d.poll("a number in "+path, 10*time.Second, func() (bool, string) {
		b, err := os.ReadFile(path)
		if err == nil {
			n, err = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return err == nil, fmt.Sprintf("%q: %v", b, err)
	})
	return n
}

// consecutive checks that lines are "<word> from", "<word> from+1", … to
// (their first field), each once; other lines are skipped.
func consecutive(lines []string, word string, from, to int) error {
	next := from
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != word {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return fmt.Errorf("line %q: %v", l, err)
		}
		if n < from {
			continue
		}
		if n != next {
			return fmt.Errorf("%s %d where %s %d was due", word, n, word, next)
		}
		next++
	}
	if next <= to {
		return fmt.Errorf("lines end at %s %d, before %s %d", word, next-1, word, to)
	}
	return nil
}

const talkManifest = `apiVersion: v1
kind: Pod
metadata:
  name: talk
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: setup
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo setup done"]
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    # The first run says two lines and crashes; the second says one, then
    # one line of 40000 bytes (the log driver splits it into partial
    # records), and sleeps.
    command: ["sh", "-c", "if [ -e /beat/ran ]; then echo second run; head -c 40000 /dev/zero | tr '\\0' x; echo; exec sleep 3600; fi; touch /beat/ran; echo first run out; echo first run err >&2; exit 3"]
    volumeMounts: [{name: beat, mountPath: /beat}]
  - name: side
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; i=0; while true; do i=$((i+1)); echo tick $i; echo $i > /beat/side; sleep 0.05; done"]
    volumeMounts: [{name: beat, mountPath: /beat}]
  volumes:
  - name: beat
    hostPath: {path: %s, type: Directory}
`

const pairManifest = `apiVersion: v1
kind: Pod
metadata:
  name: pair
  annotations:
    kubectl.kubernetes.io/default-container: b
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: a, image: busybox, imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo from a; exec sleep 3600"]}
  - {name: b, image: busybox, imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo from b; exec sleep 3600"]}
`

var timestamped = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z (.*)$`)

// TestLogs: podvisor logs prints a container's current run (a long line
// whole), its previous run, the last lines, lines since a time, with
// timestamps, every container with a prefix, kubectl's default container
// (the annotation's, else the first, said on stderr) and kubectl's errors; and the lines a container wrote while podvisor
// was killed are there once it is back.
func TestLogs(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	beat := d.hostDir("beat")
	d.start()
	d.writeManifest("talk.yaml", fmt.Sprintf(talkManifest, beat))
	d.writeManifest("pair.yaml", pairManifest)
	const talk = "talk-" + node
	d.waitPod(talk, 90*time.Second, "main restarted once and running", func(p *v1.Pod) bool {
		return running(p) && containerStatus(p, "main").RestartCount == 1
	})
	d.waitPod("pair-"+node, 60*time.Second, "Running", running)
	// Some seconds of ticks, for --since to leave out.
	d.poll("side to tick 100 times", 30*time.Second, func() (bool, string) {
		n := d.readCount(filepath.Join(beat, "side"))
		return n >= 100, fmt.Sprintf("at tick %d", n)
	})

	lines := func(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }
	mustLogs := func(args ...string) string {
		t.Helper()
		out, errOut, code := d.logsCmd(args...)
		if code != 0 {
			t.Fatalf("podvisor logs %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	mustFail := func(want string, args ...string) {
		t.Helper()
		out, errOut, code := d.logsCmd(args...)
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("podvisor logs %v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, errOut, want)
		}
	}

	// No container named: the first, said on stderr as kubectl 1.37 says it.
	if out, errOut, code := d.logsCmd("talk", "--tail", "1"); code != 0 || out != strings.Repeat("x", 40000)+"\n" ||
		errOut != `Defaulted container "main" out of: main, side, setup (init)`+"\n" {
		t.Errorf("podvisor logs talk: exit %d, stdout %.40q…, stderr %q; want main's last line and the defaulted-container notice", code, out, errOut)
	}
	mustFail("container nope is not valid for pod talk-e2e", "talk", "-c", "nope")
	mustFail(`previous terminated container "side" in pod "talk-e2e" not found`, "talk", "-c", "side", "--previous")
	mustFail(`pods "nope" not found`, "nope")

	long := strings.Repeat("x", 40000)
	if got, want := mustLogs("talk", "-c", "main"), "second run\n"+long+"\n"; got != want {
		t.Errorf("logs -c main: got %d bytes %.80q…, want the second run's two lines, the long one whole", len(got), got)
	}
	// stdout and stderr are two pipes: their lines come in the order the
	// log driver read them, which is either.
	if got := mustLogs("talk", "-c", "main", "-p"); got != "first run out\nfirst run err\n" && got != "first run err\nfirst run out\n" {
		t.Errorf("logs -c main --previous = %q, want the first run's stdout and stderr lines", got)
	}
	if got := mustLogs("pair"); got != "from b\n" {
		t.Errorf("logs of a pod with a default-container annotation = %q, want b's line", got)
	}

	tail := lines(mustLogs("talk", "-c", "side", "--tail", "3"))
	if len(tail) != 3 {
		t.Fatalf("--tail 3: %q", tail)
	}
	var first int
	if _, err := fmt.Sscanf(tail[0], "tick %d", &first); err != nil || consecutive(tail, "tick", first, first+2) != nil {
		t.Errorf("--tail 3: %q, want three consecutive ticks", tail)
	}

	stamped := lines(mustLogs("talk", "-c", "side", "--timestamps"))
	if len(stamped) < 10 {
		t.Fatalf("--timestamps: only %d lines", len(stamped))
	}
	for i, l := range stamped {
		m := timestamped.FindStringSubmatch(l)
		if m == nil || m[2] != fmt.Sprintf("tick %d", i+1) {
			t.Fatalf("--timestamps line %d = %q, want an RFC3339Nano time and tick %d", i, l, i+1)
		}
	}
	mid := stamped[len(stamped)/2]
	ts, _, _ := strings.Cut(mid, " ")
	since := lines(mustLogs("talk", "-c", "side", "--since-time", ts))
	if want := fmt.Sprintf("tick %d", len(stamped)/2+1); since[0] != want {
		t.Errorf("--since-time %s starts with %q, want %q", ts, since[0], want)
	}
	if got := mustLogs("talk", "-c", "side", "--since-time", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); got != "" {
		t.Errorf("--since-time an hour ahead = %.80q, want nothing", got)
	}
	recent := lines(mustLogs("talk", "-c", "side", "--since", "2s"))
	if len(recent) == 0 || len(recent) >= len(stamped) || recent[0] == "tick 1" {
		t.Errorf("--since 2s: %d lines from %q; want some, not from the start (%d lines so far)", len(recent), recent[0], len(stamped))
	}

	all := mustLogs("talk", "--all-containers", "--prefix")
	iSetup := strings.Index(all, "[pod/talk-e2e/setup] setup done\n")
	iMain := strings.Index(all, "[pod/talk-e2e/main] second run\n[pod/talk-e2e/main] "+long+"\n")
	iSide := strings.Index(all, "[pod/talk-e2e/side] tick 1\n")
	if iSetup < 0 || iMain < iSetup || iSide < iMain {
		t.Errorf("--all-containers --prefix: want setup's, main's then side's lines with their prefixes; got %.300q", all)
	}

	// limitBytes through the client: the output is cut after that many
	// bytes, mid-line too; a followed log of a running container ends
	// there.
	c := api.NewClient(d.sock)
	limited := func(o v1.PodLogOptions, n int64) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		o.LimitBytes = &n
		body, err := c.Logs(ctx, "talk", &o)
		if err != nil {
			t.Fatalf("logs %+v with limitBytes %d: %v", o, n, err)
		}
		defer body.Close()
		b, err := io.ReadAll(body)
		if err != nil {
			t.Fatalf("logs %+v with limitBytes %d: %v after %q", o, n, err, b)
		}
		return string(b)
	}
	if got, want := limited(v1.PodLogOptions{Container: "main"}, 15), "second run\nxxxx"; got != want {
		t.Errorf("limitBytes 15 = %q, want %q", got, want)
	}
	if got, want := limited(v1.PodLogOptions{Container: "side", Follow: true}, 20), "tick 1\ntick 2\ntick 3"; got != want {
		t.Errorf("follow with limitBytes 20 = %q, want %q", got, want)
	}
	// The CLI counts what it prints, not the timestamps it asks for.
	if got, want := mustLogs("talk", "main", "--limit-bytes", "15"), "second run\nxxxx"; got != want {
		t.Errorf("podvisor logs talk main --limit-bytes 15 = %q, want %q", got, want)
	}

	// podvisor is killed; the container goes on writing; what it wrote
	// meanwhile is in its log once podvisor is back.
	d.killGroup()
	n0 := d.readCount(filepath.Join(beat, "side"))
	d.poll("side to write 40 lines without podvisor", 20*time.Second, func() (bool, string) {
		n := d.readCount(filepath.Join(beat, "side"))
		return n >= n0+40, fmt.Sprintf("at tick %d, was at %d", n, n0)
	})
	n1 := d.readCount(filepath.Join(beat, "side"))
	d.start()
	d.poll("podvisor logs after the restart to show every tick to "+strconv.Itoa(n1), 30*time.Second, func() (bool, string) {
		out, errOut, code := d.logsCmd("talk", "-c", "side")
		if code != 0 {
			return false, errOut
		}
		err := consecutive(lines(out), "tick", 1, n1)
		return err == nil, fmt.Sprint(err)
	})
}

// The counter says "ready", waits for /beat/go, then counts, a line every
// 50ms (some 20 lines, 1.5 KB a second: with twenty 4 KB files, whatever
// podvisor and the client miss for less than some 50s is still on disk),
// keeping
// its count in /beat/n. When /beat/crash appears it removes it and exits
// 1; its next run says "restart" and goes on counting.
const counterScript = `trap 'exit 0' TERM
pad=$(printf '%060d' 0)
if [ -e /beat/n ]; then i=$(cat /beat/n); echo restart; else i=0; echo ready; while [ ! -e /beat/go ]; do sleep 0.05; done; fi
while [ ! -e /beat/crash ]; do i=$((i+1)); echo "line $i $pad"; echo $i > /beat/n; sleep 0.05; done
rm /beat/crash
exit 1`

// TestLogsFollow: one `podvisor logs -f` prints every line of a container
// exactly once while its log rotates (a small --container-log-max-size),
// while podvisor is killed and started again (and the container restarts
// meanwhile), and across a restart of the container; it ends when the pod
// is deleted.
func TestLogsFollow(t *testing.T) {
	t.Parallel()
	d := newDaemon(t, "--container-log-max-size", "4096", "--container-log-max-files", "20")
	beat := d.hostDir("beat")
	d.start()
	d.writeManifest("counter.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: counter
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
    volumeMounts: [{name: beat, mountPath: /beat}]
  volumes:
  - name: beat
    hostPath: {path: %s, type: Directory}
`, counterScript, beat))
	const name = "counter-" + node
	p := d.waitPod(name, 60*time.Second, "Running", running)
	logDir := filepath.Join(d.logs, fmt.Sprintf("default_%s_%s", name, p.UID), "main")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client := exec.CommandContext(ctx, podvisorBin, "logs", "--socket", d.sock, "-f", "counter")
	var stdout, stderr syncbuf.Buffer
	client.Stdout, client.Stderr = &stdout, &stderr
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- client.Wait() }()
	printed := func() int {
		n := 0
		for _, l := range strings.Split(stdout.String(), "\n") {
			fmt.Sscanf(l, "line %d", &n)
		}
		return n
	}
	waitPrinted := func(what string, n int) {
		t.Helper()
		d.poll(what, 60*time.Second, func() (bool, string) {
			select {
			case err := <-exited:
				exited <- err
				return false, fmt.Sprintf("podvisor logs -f exited: %v: %s", err, stderr.String())
			default:
			}
			return printed() >= n, fmt.Sprintf("printed up to line %d", printed())
		})
	}
	d.poll("logs -f to print ready", 30*time.Second, func() (bool, string) {
		return strings.HasPrefix(stdout.String(), "ready\n"), fmt.Sprintf("%q %q", stdout.String(), stderr.String())
	})
	if err := os.WriteFile(filepath.Join(beat, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rotated := func() []string {
		files, _ := filepath.Glob(filepath.Join(logDir, "0.log.*"))
		var out []string
		for _, f := range files {
			if !strings.HasSuffix(f, ".dropped") {
				out = append(out, filepath.Base(f))
			}
		}
		return out
	}
	// About 75 bytes a line: 4 KB is some 55 lines; 200 lines are three
	// rotations, the oldest gzipped.
	waitPrinted("logs -f to print 200 lines", 200)
	d.poll("a gzipped rotation", 20*time.Second, func() (bool, string) {
		r := rotated()
		return slices.ContainsFunc(r, func(f string) bool { return strings.HasSuffix(f, ".gz") }), fmt.Sprint(r)
	})
	// Without -f too: the whole log, from the gzipped files on, and a
	// tail of it.
	seen := rotated()
	n := d.readCount(filepath.Join(beat, "n"))
	out, errOut, code := d.logsCmd("counter")
	whole := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || whole[0] != "ready" {
		t.Fatalf("logs: exit %d, %s, %.100q; want ready first", code, errOut, out)
	}
	if err := consecutive(whole, "line", 1, n); err != nil {
		t.Errorf("logs across rotated and gzipped files (%v): %v", rotated(), err)
	}
	out, errOut, code = d.logsCmd("counter", "--tail", "150")
	tail := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var from int
	fmt.Sscanf(tail[0], "line %d", &from)
	if err := consecutive(tail, "line", from, from+149); code != 0 || len(tail) != 150 || err != nil {
		t.Errorf("logs --tail 150: exit %d, %s, %d lines from %q: %v", code, errOut, len(tail), tail[0], err)
	}

	count := func() int { return d.readCount(filepath.Join(beat, "n")) }
	counted := func(what string, n int) {
		t.Helper()
		d.poll(what, 60*time.Second, func() (bool, string) {
			return count() >= n, fmt.Sprintf("at %d", count())
		})
	}
	crash := func() {
		t.Helper()
		if err := os.WriteFile(filepath.Join(beat, "crash"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// podvisor is killed; the counter goes on, then crashes, and once
	// podvisor is back it restarts and goes on counting. The client is
	// held stopped meanwhile, so that it resumes only once the run it
	// followed is the previous one: what that run wrote after the last
	// line printed comes first, then the new run.
	if err := client.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	d.killGroup()
	counted("the counter to go on without podvisor", count()+30)
	crash()
	d.poll("the counter to crash", 20*time.Second, func() (bool, string) {
		_, err := os.Stat(filepath.Join(beat, "crash"))
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	d.start()
	d.waitPod(name, 60*time.Second, "restarted and running", func(p *v1.Pod) bool {
		return running(p) && containerStatus(p, "main").RestartCount == 1
	})
	counted("the next run to count", count()+20)
	if err := client.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitPrinted("logs -f to print what was written while it and podvisor were away", count()+20)

	// The container crashes and restarts while logs -f follows it.
	crash()
	d.waitPod(name, 60*time.Second, "restarted again and running", func(p *v1.Pod) bool {
		return running(p) && containerStatus(p, "main").RestartCount == 2
	})
	waitPrinted("logs -f to follow the next run", count()+20)

	// The pod is deleted: logs -f ends, exit 0.
	d.removeManifest("counter.yaml")
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("podvisor logs -f: %v: %s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("podvisor logs -f still runs 60s after the pod's manifest was removed")
	}
	followed := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	last := printed()
	if err := consecutive(followed, "line", 1, last); err != nil {
		t.Errorf("logs -f did not print every line once: %v", err)
	}
	if followed[0] != "ready" || strings.Count(stdout.String(), "restart\n") != 2 {
		t.Errorf("logs -f: want ready first and restart twice; got %.200q", stdout.String())
	}
	if got := strings.Count(stderr.String(), "the log stream broke"); got != 1 {
		t.Errorf("logs -f said %d times that the stream broke, want once: %q", got, stderr.String())
	}
	t.Logf("%d lines followed through rotations (%v after 200 lines), a podvisor restart and two container restarts", last, seen)
}
