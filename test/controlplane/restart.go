package controlplane

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// Prepare writes what Start writes (the PKI and kubeconfigs, naming the
// apiserver's port) and starts nothing: a node agent can be started with
// kubelet.conf before any apiserver answers, as kubeadm starts kubelet.
// Launch then starts the control plane; Stop (a t.Cleanup) ends it.
func Prepare(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	b := Binaries(t)
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	cp := newControlPlane(b, opts)
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	if err := cp.prepare(t.Context()); err != nil {
		t.Fatalf("prepare control plane in %s: %v", cp.Dir, err)
	}
	return cp
}

// New is Prepare for a program without a testing.T (a benchmark): it
// writes the PKI and kubeconfigs into opts.Dir, which must be set, and
// starts nothing. The caller calls Stop once it has called Run.
func New(ctx context.Context, b *Artifacts, opts Options) (*ControlPlane, error) {
	if opts.Dir == "" {
		return nil, errors.New("control plane: no directory")
	}
	cp := newControlPlane(b, opts)
	if err := cp.prepare(ctx); err != nil {
		return nil, fmt.Errorf("prepare control plane in %s: %w", cp.Dir, err)
	}
	return cp, nil
}

// Run is Launch for a program without a testing.T: it starts etcd and
// kube-apiserver and returns once /readyz answers ok, or an error after
// ReadyTimeout.
func (cp *ControlPlane) Run(ctx context.Context) error {
	if err := cp.launch(ctx); err != nil {
		return fmt.Errorf("start control plane in %s: %w", cp.Dir, err)
	}
	return nil
}

func newControlPlane(b *Artifacts, opts Options) *ControlPlane {
	cp := &ControlPlane{Binaries: b, NodeName: opts.NodeName, Dir: opts.Dir, apiExtra: opts.APIServerArgs}
	if cp.NodeName == "" {
		cp.NodeName = "node1"
	}
	cp.PKIDir = filepath.Join(cp.Dir, "pki")
	cp.KubeconfigDir = filepath.Join(cp.Dir, "kubernetes")
	cp.AdminKubeconfig = filepath.Join(cp.KubeconfigDir, "admin.conf")
	cp.SuperAdminKubeconfig = filepath.Join(cp.KubeconfigDir, "super-admin.conf")
	cp.KubeletKubeconfig = filepath.Join(cp.KubeconfigDir, "kubelet.conf")
	return cp
}

// Launch starts etcd and kube-apiserver of a prepared control plane and
// returns once /readyz answers ok (failing t after ReadyTimeout). The port
// was free when Prepare chose it; should another process have taken it
// since, the apiserver fails to bind and Launch says so.
func (cp *ControlPlane) Launch(t testing.TB) {
	t.Helper()
	began := time.Now()
	if err := cp.launch(t.Context()); err != nil {
		t.Fatalf("start control plane in %s: %v", cp.Dir, err)
	}
	t.Logf("control plane %s ready at %s in %v (logs: %s/{etcd,kube-apiserver}.log)", Version, cp.Server, time.Since(began).Round(time.Millisecond), cp.Dir)
}

// APIServerGrace is how long StopAPIServer lets kube-apiserver drain after
// SIGTERM before it kills it. It closes its port at once but then waits up
// to its request timeout (60 s) for open watches to end; kubelet would kill
// it after the pod's 30 s grace period, a test need not wait that long.
const APIServerGrace = 5 * time.Second

// StopAPIServer ends kube-apiserver alone: SIGTERM, then SIGKILL after
// APIServerGrace. etcd and the data stay, and StartAPIServer starts it
// again.
func (cp *ControlPlane) StopAPIServer(t testing.TB) {
	t.Helper()
	p := cp.proc("kube-apiserver")
	if p == nil {
		t.Fatal("kube-apiserver is not running")
	}
	began := time.Now()
	killed := p.stopWithin(APIServerGrace)
	cp.forget(p)
	how := "exited"
	if killed {
		how = "killed after " + APIServerGrace.String()
	}
	t.Logf("kube-apiserver stopped (SIGTERM, %s) in %v", how, time.Since(began).Round(time.Millisecond))
}

// StartAPIServer starts kube-apiserver again, with the same flags, port and
// etcd, and returns once /readyz answers ok. Its log goes on in
// kube-apiserver.log.
func (cp *ControlPlane) StartAPIServer(t testing.TB) {
	t.Helper()
	if cp.proc("kube-apiserver") != nil {
		t.Fatal("kube-apiserver is running already")
	}
	began := time.Now()
	if err := cp.runAPIServer(); err != nil {
		t.Fatal(err)
	}
	// A controller manager that was still starting when the apiserver went
	// away exits (as kubeadm's does, for kubelet to start it again): the
	// tests restart it after an outage (RestartControllerManager).
	if err := cp.waitReady(t.Context(), "kube-controller-manager"); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver ready again in %v", time.Since(began).Round(time.Millisecond))
}

// StartControllerManager runs kube-controller-manager with the flags of
// kubeadm's manifest (controller-manager.conf, every controller kubeadm
// enables), on a free port instead of 10257, with extra flags after them
// (as --node-monitor-grace-period=20s, for a node lifecycle controller
// quicker than the 50 s default). It runs without leader election: with it,
// the controller manager exits when the apiserver is gone longer than its
// renew deadline, and tests stop the apiserver. Stop ends it.
func (cp *ControlPlane) StartControllerManager(t testing.TB, extra ...string) {
	t.Helper()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	pki := func(name string) string { return filepath.Join(cp.PKIDir, name) }
	conf := filepath.Join(cp.KubeconfigDir, "controller-manager.conf")
	args := []string{
		"--authentication-kubeconfig=" + conf,
		"--authorization-kubeconfig=" + conf,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--client-ca-file=" + pki("ca.crt"),
		"--cluster-name=kubernetes",
		"--cluster-signing-cert-file=" + pki("ca.crt"),
		"--cluster-signing-key-file=" + pki("ca.key"),
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--kubeconfig=" + conf,
		"--leader-elect=false",
		"--requestheader-client-ca-file=" + pki("front-proxy-ca.crt"),
		"--root-ca-file=" + pki("ca.crt"),
		"--service-account-private-key-file=" + pki("sa.key"),
		"--use-service-account-credentials=true",
		"--cert-dir=" + filepath.Join(cp.Dir, "controller-manager-certs"),
	}
	if err := cp.run("kube-controller-manager", cp.Binaries.KubeControllerManager, append(args, extra...)...); err != nil {
		t.Fatal(err)
	}
	cp.kcmExtra = extra
}

// RestartControllerManager stops kube-controller-manager and starts it
// again with the same flags. Under kubeadm it exits when an apiserver
// outage outlasts its leader lease and kubelet starts it again; without
// leader election, an informer of the one started before the outage may
// never catch up (v1.37.2's node lifecycle controller then stays stuck on
// "read version ... is not as new as written version" for leases).
func (cp *ControlPlane) RestartControllerManager(t testing.TB) {
	t.Helper()
	p := cp.proc("kube-controller-manager")
	if p == nil {
		t.Fatal("kube-controller-manager is not running")
	}
	select {
	case <-p.done:
		t.Logf("kube-controller-manager had exited (%v); starting it again", p.err)
	default:
	}
	err := p.stop()
	cp.forget(p)
	if err != nil {
		t.Fatal(err)
	}
	cp.StartControllerManager(t, cp.kcmExtra...)
}

// running is a copy of the programs started and not stopped on purpose.
func (cp *ControlPlane) running() []*process {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return slices.Clone(cp.procs)
}

// proc is the running program named name, nil when there is none.
func (cp *ControlPlane) proc(name string) *process {
	for _, p := range cp.running() {
		if p.name == name {
			return p
		}
	}
	return nil
}

// forget drops a program stopped on purpose.
func (cp *ControlPlane) forget(p *process) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.procs = slices.DeleteFunc(cp.procs, func(q *process) bool { return q == p })
}
