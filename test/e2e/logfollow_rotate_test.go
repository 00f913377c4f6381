package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/test/syncbuf"
	v1 "k8s.io/api/core/v1"
)

// fastRotatingManifest prints "line 1".."line first" of about 100 bytes,
// records first in /beat/n, waits for /beat/go, prints on to "line last"
// as fast as it can, records last, and exits 0 (never restarted).
func fastRotatingManifest(beat string, first, last int) string {
	script := fmt.Sprintf(`pad=$(printf '%%090d' 0)
i=0
while [ $i -lt %d ]; do i=$((i+1)); echo "line $i $pad"; done
echo $i > /beat/n
while [ ! -e /beat/go ]; do sleep 0.05; done
while [ $i -lt %d ]; do i=$((i+1)); echo "line $i $pad"; done
echo $i > /beat/n`, first, last)
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: fastrot
spec:
  restartPolicy: Never
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
`, script, beat)
}

// TestLogsFollowFastRotation: `podvisor logs -f` of a container whose log
// rotates far more often than the follower looks (16 KiB files, two kept,
// some 120 rotations while the client is stopped and the server's writes
// to it block): every line it prints is printed once and in order, every
// line still kept in the log files at the end is printed, and where lines
// are missing (rotated out before they could be read) a line of
// podvisor's says so first.
func TestLogsFollowFastRotation(t *testing.T) {
	t.Parallel()
	d := newDaemon(t, "--container-log-max-size", "16Ki", "--container-log-max-files", "2")
	beat := d.hostDir("beat")
	d.start()
	const first, last = 300, 20000
	d.writeManifest("fastrot.yaml", fastRotatingManifest(beat, first, last))
	const name = "fastrot-" + node
	p := d.waitPod(name, 60*time.Second, "Running", running)
	live := filepath.Join(d.logs, fmt.Sprintf("default_%s_%s", name, p.UID), "main", "0.log")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client := exec.CommandContext(ctx, podvisorBin, "logs", "--socket", d.sock, "-f", "fastrot")
	var stdout, stderr syncbuf.Buffer
	client.Stdout, client.Stderr = &stdout, &stderr
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- client.Wait() }()
	d.poll(fmt.Sprintf("logs -f to print line %d", first), 60*time.Second, func() (bool, string) {
		return strings.Contains(stdout.String(), fmt.Sprintf("line %d ", first)), fmt.Sprintf("%d bytes printed; %s", len(stdout.String()), stderr.String())
	})

	// The client stops reading: once the socket's buffers are full, the
	// server's follower blocks in its write while the log rotates on.
	if err := client.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(beat, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d.waitPod(name, 60*time.Second, "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	if n := d.readCount(filepath.Join(beat, "n")); n != last {
		t.Fatalf("the container counted to %d, want %d", n, last)
	}
	if err := client.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("podvisor logs -f: %v: %s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("podvisor logs -f still runs 60s after the container ended; printed %d bytes", len(stdout.String()))
	}

	// What the log files keep at the end: the last rotated file and the
	// live one.
	rotated, err := crilog.Rotated(live)
	if err != nil {
		t.Fatal(err)
	}
	var kept []int
	for _, f := range append(rotated, live) {
		recs, err := readAnyLog(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			var n int
			if _, err := fmt.Sscanf(string(r.Content), "line %d ", &n); err != nil {
				t.Fatalf("%s: record %q", f, r.Content)
			}
			kept = append(kept, n)
		}
	}
	if len(kept) == 0 || kept[len(kept)-1] != last || kept[0] < 2*first {
		t.Fatalf("kept lines %v..., want the last ones, ending at %d, after many rotations", kept[:min(len(kept), 3)], last)
	}

	out := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	printed := map[int]bool{}
	prev, gaps := 0, 0
	for i, l := range out {
		if strings.HasPrefix(l, "podvisor: log output ") {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(l, "line %d ", &n); err != nil {
			t.Fatalf("printed line %d: %.60q is not the container's", i, l)
		}
		switch {
		case prev == 0:
			// The first line kept when logs -f started.
		case n <= prev:
			t.Fatalf("printed line %d: line %d after line %d (printed twice or out of order)", i, n, prev)
		case n != prev+1:
			gaps++
			if i == 0 || !strings.HasPrefix(out[i-1], "podvisor: log output ") {
				t.Fatalf("printed line %d: line %d after line %d, and nothing says lines are missing; around: %q", i, n, prev, out[max(0, i-3):min(len(out), i+2)])
			}
		}
		printed[n] = true
		prev = n
	}
	for _, n := range kept {
		if !printed[n] {
			t.Fatalf("line %d, still kept in the log files, was never printed (printed up to %d)", n, prev)
		}
	}
	if gaps == 0 {
		t.Fatalf("no line was missing: the log never rotated faster than it was followed, so this test proved nothing")
	}
	t.Logf("printed %d lines, %d gaps said; kept %d..%d in %d rotated files", len(printed), gaps, kept[0], kept[len(kept)-1], len(rotated))
}

// TestLogsSymlinkRefused: a container with a hostPath volume of the log
// directory plants symlinks to a host file (a CRI log, so that a reader
// following them would serve it): as its own live file (a), as a rotated
// file beside its live one (b), and in place of its log directory (c).
// `podvisor logs` of each prints nothing of the host file, and podvisor
// logs that it refused the file.
func TestLogsSymlinkRefused(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	beat := d.hostDir("beat")
	secretDir := d.hostDir("secret")
	secret := "SECRET-" + randHex(8)
	if err := os.WriteFile(filepath.Join(secretDir, "0.log"), []byte("2026-12-01T10:00:00Z stdout F "+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(d.logs, 0o755); err != nil {
		t.Fatal(err)
	}
	d.start()
	const name = "planter-" + node
	plant := map[string]string{
		"a": `rm "$d/0.log"; ln -s ` + secretDir + `/0.log "$d/0.log"`,
		"b": `ln -s ` + secretDir + `/0.log "$d/0.log.20200101-000000"`,
		"c": `mv "$d" "$d.old"; ln -s ` + secretDir + ` "$d"`,
	}
	var containers strings.Builder
	for _, c := range []string{"a", "b", "c"} {
		script := fmt.Sprintf(`echo %s own line; d=$(echo /logs/default_%s_*/%s); %s && touch /beat/%s; exec sleep 3600`, c, name, c, plant[c], c)
		fmt.Fprintf(&containers, `  - name: %s
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
    volumeMounts: [{name: logs, mountPath: /logs}, {name: beat, mountPath: /beat}]
`, c, script)
	}
	d.writeManifest("planter.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: planter
spec:
  terminationGracePeriodSeconds: 1
  containers:
%s  volumes:
  - name: logs
    hostPath: {path: %s, type: Directory}
  - name: beat
    hostPath: {path: %s, type: Directory}
`, containers.String(), d.logs, beat))
	p := d.waitPod(name, 60*time.Second, "Running", running)
	podLogs := filepath.Join(d.logs, fmt.Sprintf("default_%s_%s", name, p.UID))
	for _, c := range []string{"a", "b", "c"} {
		d.poll("container "+c+" to plant its symlink", 30*time.Second, func() (bool, string) {
			_, err := os.Stat(filepath.Join(beat, c))
			return err == nil, fmt.Sprint(err)
		})
	}
	// The links are there and lead to the host's file: a reader that
	// follows them serves it.
	for _, path := range []string{
		filepath.Join(podLogs, "a", "0.log"),
		filepath.Join(podLogs, "b", "0.log.20200101-000000"),
		filepath.Join(podLogs, "c", "0.log"),
	} {
		if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), secret) {
			t.Fatalf("%s does not lead to the host's file: %q, %v", path, b, err)
		}
	}
	for _, c := range []string{"a", "b", "c"} {
		out, errOut, code := d.logsCmd("planter", "-c", c)
		if strings.Contains(out+errOut, secret) {
			t.Errorf("podvisor logs -c %s served the host's file: exit %d, %q %q", c, code, out, errOut)
		}
		if code == 0 || !strings.Contains(errOut, "refused") {
			t.Errorf("podvisor logs -c %s: exit %d, %q %q; want an error saying the log is refused", c, code, out, errOut)
		}
		d.waitLogLine(`msg="read log"`, "container="+c+" ", "refused")
	}
}
