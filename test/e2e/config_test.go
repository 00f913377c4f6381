package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	v1 "k8s.io/api/core/v1"
)

// TestConfigViewPiped: podvisor config view [flags] | podvisor run
// --config - runs as the flags would: the node name given as a flag
// (lowercased) names the pod.
func TestConfigViewPiped(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.writeManifest("piped.yaml", fmt.Sprintf(hostnamePod, "piped"))
	flags := append(withoutFlags(d.args()[1:], "--node-name"), "--node-name", "Piped-Node")
	view, err := exec.Command(podvisorBin, append([]string{"config", "view"}, flags...)...).Output()
	if err != nil {
		t.Fatalf("config view: %v", err)
	}
	logf, err := os.OpenFile(d.logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	d.cmd = exec.Command(podvisorBin, "run", "--config", "-")
	d.cmd.Stdin = strings.NewReader(string(view))
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	d.exited = make(chan error, 1)
	cmd := d.cmd
	go func() { d.exited <- cmd.Wait() }()
	c := api.NewClient(d.sock)
	d.poll("podvisor API to answer", 30*time.Second, func() (bool, string) {
		err := c.Healthz(context.Background())
		return err == nil, fmt.Sprint(err)
	})
	p := d.waitPod("piped-piped-node", 60*time.Second, "running", func(p *v1.Pod) bool { return running(p) })
	if p.Spec.NodeName != "piped-node" {
		t.Errorf("spec.nodeName %q, want piped-node from the flag through config view", p.Spec.NodeName)
	}
}

// TestRefusedAtStart: the real binary refuses each bad value before it
// creates anything, naming the flag or the file's key, with exit code 2.
func TestRefusedAtStart(t *testing.T) {
	requireEnv(t)
	t.Parallel()
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"--relist-period", "-5s"}, "", "--relist-period: -5s: must be more than 0"},
		{[]string{"--relist-period", "0s"}, "", "--relist-period: 0s: must be more than 0"},
		{[]string{"--node-ip", "999.1.1.1"}, "", `--node-ip: "999.1.1.1" is not an IP address`},
		{[]string{"--node-name", "Edge_7!"}, "", `--node-name: "Edge_7!": not a valid node name`},
		{[]string{"--pod-cidr", "10.0.0.0/33"}, "", `--pod-cidr: "10.0.0.0/33" is not a subnet`},
		{[]string{"--container-log-max-size", "0"}, "", `--container-log-max-size: "0": the size must be positive`},
		{[]string{"--config", "-"}, "apiVersion: podvisor.io/v1alpha1\nkind: PodvisorConfiguration\nrelistPeriod: -5s\n", "<stdin>:3: relistPeriod: -5s: must be more than 0"},
		{[]string{"--config", "-"}, "apiVersion: podvisor.io/v1alpha1\nkind: PodvisorConfiguration\nnodeName: Edge_7!\n", `<stdin>:3: nodeName: "Edge_7!": not a valid node name`},
	} {
		dir := t.TempDir()
		state := filepath.Join(dir, "state")
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		cmd := exec.CommandContext(ctx, podvisorBin, slices.Concat([]string{"run", "--state-dir", state, "--run-dir", filepath.Join(dir, "run"), "--log-dir", filepath.Join(dir, "logs")}, tc.args)...)
		cmd.Stdin = strings.NewReader(tc.stdin)
		out, err := cmd.CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("podvisor run %q: %v\n%s\nwant exit 2 and %q", tc.args, err, out, tc.want)
		}
		if _, err := os.Stat(state); err == nil {
			t.Errorf("podvisor run %q created its state dir before refusing", tc.args)
		}
	}
}
