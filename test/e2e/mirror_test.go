package e2e

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podvisor/podvisor/test/controlplane"
)

// nodeMonitorGracePeriod is kube-controller-manager's
// --node-monitor-grace-period here: how long after the last lease renewal
// the node lifecycle controller marks the Node NotReady (50 s by default;
// shorter for the test's sake, still twice kubelet's 10 s renewal).
const nodeMonitorGracePeriod = 20 * time.Second

// mirrorCluster is podvisor under test with the control plane it mirrors
// into, and an admin client of that control plane.
type mirrorCluster struct {
	d  *daemon
	cp *controlplane.ControlPlane
	cs kubernetes.Interface
}

// TestMirror runs podvisor with kubeadm's kubelet.conf against a real
// etcd, kube-apiserver (Node,RBAC authorization, NodeRestriction) and
// kube-controller-manager (every controller kubeadm enables), as it runs
// under kubeadm, through one sequence of steps that share the control
// plane; a step that fails stops the ones after it.
func TestMirror(t *testing.T) {
	requireEnv(t)
	// Its own control plane on free ports: it runs beside the other
	// control-plane tests of this kind once TestKubeadmControlPlane (fixed
	// ports) is done.
	t.Parallel()
	// Skips when the control plane was never built and
	// $PODVISOR_TEST_CONTROLPLANE is unset; fails when it is set.
	dir, err := os.MkdirTemp("", "pv-e2e-cp-")
	if err != nil {
		t.Fatal(err)
	}
	// Runs after the control plane's Stop: its logs stay when the test fails.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control plane logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	cp := controlplane.Prepare(t, controlplane.Options{NodeName: node, Dir: dir})
	d := newDaemon(t, "--kubeconfig", cp.KubeletKubeconfig)
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &mirrorCluster{d: d, cp: cp, cs: cs}

	step := func(name string, f func(t *testing.T)) {
		ok := t.Run(name, func(t *testing.T) {
			// The daemon's helpers fail the test they were given: this one.
			d.t = t
			defer func() { d.t = t }()
			f(t)
		})
		d.t = t
		if !ok {
			t.FailNow()
		}
	}
	var webMirror types.UID // the web pod's mirror, as the steps leave it
	step("RegisterWhenTheAPIServerAppears", func(t *testing.T) { webMirror = c.register(t) })
	step("DeletedMirrorRecreated", func(t *testing.T) { webMirror = c.deletedMirror(t, webMirror) })
	step("APIServerOutage", func(t *testing.T) { c.outage(t, webMirror) })
	step("ManifestRemovedMirrorGone", c.manifestRemoved)
	step("StoppingPodMirrorTerminating", c.stoppingTerminating)
	step("RestartPolicyNeverMirrorRecreated", c.restartPolicyNever)
	step("PodvisorStoppedNodeNotReady", c.podvisorStopped)
	step("TLSWebhookAuthorization", c.tlsWebhook)
}

// register: podvisor starts with kubelet.conf while nothing listens on the
// apiserver's port, runs a pod, and once the apiserver answers registers
// the Node (within seconds), Ready, with kubelet's labels, addresses and
// nodeInfo; renews its lease; and mirrors the pod, annotated and owned as
// kubelet's mirror pods are and with the local pod's status.
func (c *mirrorCluster) register(t *testing.T) types.UID {
	d, cp := c.d, c.cp
	d.start()
	d.writeManifest("web.yaml", sleeperManifest("web", 1, "sleep 3600"))
	local := d.waitPod("web-"+node, 60*time.Second, "Running without an apiserver", running)
	// podvisor has been trying the apiserver's port all along.
	d.waitLogLine("node status", "connection refused")

	seen := c.watchRegistration(t)
	cp.Launch(t)
	cp.StartControllerManager(t, "--node-monitor-grace-period="+nodeMonitorGracePeriod.String())
	var r registration
	select {
	case r = <-seen:
	case <-time.After(60 * time.Second):
		t.Fatal("the Node was not registered within 60s of the apiserver becoming ready")
	}
	latency := r.node.Sub(r.answered)
	t.Logf("Node registered %v after the apiserver first answered (observed every %v)", latency.Round(time.Millisecond), registrationPoll)
	// kubelet retries its registration at most 7 s apart.
	if latency > 10*time.Second {
		t.Errorf("Node registered %v after the apiserver first answered, want within 10s", latency.Round(time.Millisecond))
	}

	// Under NodeRestriction, as kubeadm runs the apiserver: kubelet.conf
	// may not give its Node a node-role label.
	if out, err := cp.RunKubectl(t.Context(), "--kubeconfig", cp.KubeletKubeconfig, "label", "node", node, "node-role.kubernetes.io/control-plane="); err == nil || !strings.Contains(err.Error(), "is not allowed to modify labels") {
		t.Errorf("kubelet.conf labelled its node (%q, %v): NodeRestriction is not in force", out, err)
	}

	n := c.waitNode(t, "Ready", 30*time.Second, func(n *v1.Node) bool { return nodeCondition(n, v1.NodeReady).Status == v1.ConditionTrue })
	c.checkNode(t, n)

	l, err := c.cs.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(t.Context(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != node || l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 40 ||
		len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" || l.OwnerReferences[0].UID != n.UID || l.Spec.RenewTime == nil {
		t.Errorf("lease = holder %v, duration %v, owners %+v, renewTime %v; want %s, 40, the Node %s, set",
			ptrStr(l.Spec.HolderIdentity), ptrStr(l.Spec.LeaseDurationSeconds), l.OwnerReferences, l.Spec.RenewTime, node, n.UID)
	}

	local, _ = d.pod("web-" + node)
	m := c.waitMirrorLike(t, local, 30*time.Second)

	// What `kubectl get pods -A` shows of it.
	var row []string
	for _, line := range strings.Split(cp.Kubectl(t, "get", "pods", "-A", "--no-headers"), "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[1] == "web-"+node {
			row = f
		}
	}
	if !slices.Equal(row[:min(len(row), 5)], []string{"default", "web-" + node, "1/1", "Running", "0"}) {
		t.Errorf("kubectl get pods -A: web-%s row %q, want default web-%[1]s 1/1 Running 0", node, row)
	}

	// The lease is renewed (every 10 s).
	first := l.Spec.RenewTime.Time
	d.poll("the lease to be renewed", 20*time.Second, func() (bool, string) {
		l, err := c.cs.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime.After(first), fmt.Sprintf("renewTime %v, first seen %v", l.Spec.RenewTime, first)
	})
	return m.UID
}

// registrationPoll is how often watchRegistration looks.
const registrationPoll = 50 * time.Millisecond

// registration is when the apiserver first answered and when the Node was
// first there.
type registration struct{ answered, node time.Time }

// watchRegistration looks, from before the apiserver starts, for its first
// answer to /livez and for the Node, with super-admin.conf (system:masters
// is authorised before RBAC's bootstrap policy is in place, which
// admin.conf needs). It sends both times once the Node is there.
func (c *mirrorCluster) watchRegistration(t *testing.T) <-chan registration {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.cp.SuperAdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan registration, 1)
	go func() {
		ctx := t.Context()
		var r registration
		tick := time.NewTicker(registrationPoll)
		defer tick.Stop()
		for {
			if r.answered.IsZero() {
				if _, err := cs.Discovery().RESTClient().Get().AbsPath("/livez").DoRaw(ctx); err == nil {
					r.answered = time.Now()
				}
			}
			if !r.answered.IsZero() {
				if _, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err == nil {
					r.node = time.Now()
					out <- r
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// checkNode checks what kubelet puts in a Node it registers.
func (c *mirrorCluster) checkNode(t *testing.T, n *v1.Node) {
	t.Helper()
	for k, v := range map[string]string{
		"kubernetes.io/hostname": node, "kubernetes.io/os": "linux", "kubernetes.io/arch": runtime.GOARCH,
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": runtime.GOARCH,
	} {
		if n.Labels[k] != v {
			t.Errorf("node label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}, {Type: v1.NodeHostName, Address: node}}
	if !slices.Equal(n.Status.Addresses, want) {
		t.Errorf("node addresses = %v, want %v", n.Status.Addresses, want)
	}
	if r := nodeCondition(n, v1.NodeReady); r.Reason != "KubeletReady" {
		t.Errorf("Ready condition = %+v, want reason KubeletReady", r)
	}
	for _, ct := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		if s := nodeCondition(n, ct).Status; s != v1.ConditionFalse {
			t.Errorf("condition %s = %q, want False", ct, s)
		}
	}
	cl, err := containerd.New(env.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ver, err := cl.Version(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	bootID, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	info := n.Status.NodeInfo
	for _, f := range []struct{ name, got, want string }{
		{"containerRuntimeVersion", info.ContainerRuntimeVersion, "containerd://" + ver.Version},
		{"kernelVersion", info.KernelVersion, unix.ByteSliceToString(uts.Release[:])},
		{"bootID", info.BootID, strings.TrimSpace(string(bootID))},
		{"kubeletVersion", info.KubeletVersion, controlplane.Version},
		{"operatingSystem", info.OperatingSystem, "linux"},
		{"architecture", info.Architecture, runtime.GOARCH},
	} {
		if f.got != f.want {
			t.Errorf("nodeInfo.%s = %q, want %q", f.name, f.got, f.want)
		}
	}
	if info.OSImage == "" || info.MachineID == "" && fileExists("/etc/machine-id") {
		t.Errorf("nodeInfo osImage %q, machineID %q: want both", info.OSImage, info.MachineID)
	}
	capacity := n.Status.Capacity
	if capacity.Cpu().Value() != int64(runtime.NumCPU()) || capacity.Pods().Value() != 110 ||
		capacity.Memory().Value() <= 0 || capacity.StorageEphemeral().Value() <= 0 {
		t.Errorf("capacity = %v, want %d cpu, 110 pods, some memory and ephemeral-storage", capacity, runtime.NumCPU())
	}
	if len(n.Status.Allocatable) == 0 {
		t.Error("no allocatable")
	}
}

// deletedMirror: a mirror deleted with kubectl is recreated, with a new
// UID and the pod's status; the local container is not touched.
func (c *mirrorCluster) deletedMirror(t *testing.T, old types.UID) types.UID {
	d := c.d
	before, err := d.pod("web-" + node)
	if err != nil {
		t.Fatal(err)
	}
	id := containerID(before, "main")
	pid := d.taskPID(id)
	restarts := containerStatus(before, "main").RestartCount

	// kubectl's default: a graceful delete, which waits until the pod is
	// gone (for a mirror pod, until podvisor finishes it).
	c.cp.Kubectl(t, "delete", "pod", "web-"+node, "--timeout=30s")
	m := c.waitMirror(t, "web-"+node, "recreated", 30*time.Second, func(m *v1.Pod) bool { return m.UID != old })
	local, _ := d.pod("web-" + node)
	m = c.waitMirrorLike(t, local, 30*time.Second)
	if m.UID == old {
		t.Fatalf("mirror UID %s unchanged", m.UID)
	}
	if got := containerID(local, "main"); got != id || d.taskPID(id) != pid || containerStatus(local, "main").RestartCount != restarts {
		t.Errorf("local container after the mirror's deletion: %s pid %d restarts %d; before: %s pid %d restarts %d",
			got, d.taskPID(id), containerStatus(local, "main").RestartCount, id, pid, restarts)
	}
	return m.UID
}

// outageFor is how long the apiserver stays away in the outage step.
const outageFor = 30 * time.Second

// outage: with kube-apiserver stopped for 30 s a pod is added; it runs at
// once, and once the apiserver is back it is mirrored and its events are
// delivered; the node is Ready, every mirror has its pod's status, no
// mirror is made twice and the mirror that was fine is kept.
func (c *mirrorCluster) outage(t *testing.T, webMirror types.UID) {
	d, cp := c.d, c.cp
	web, _ := d.pod("web-" + node)
	webID := containerID(web, "main")

	// The outage begins with SIGTERM: kube-apiserver closes its port at once.
	stopped := time.Now()
	cp.StopAPIServer(t)
	d.writeManifest("late.yaml", sleeperManifest("late", 1, "sleep 3600"))
	d.waitPod("late-"+node, 60*time.Second, "Running while the apiserver is away", running)
	// The rest of the outage: the pods stay as they are.
	d.poll(fmt.Sprintf("%v of outage", outageFor), outageFor+10*time.Second, func() (bool, string) {
		p, err := d.pod("web-" + node)
		if err != nil || containerID(p, "main") != webID || !running(p) {
			t.Fatalf("web pod during the outage: %v, container %s (was %s)", err, containerID(p, "main"), webID)
		}
		return time.Since(stopped) >= outageFor, ""
	})
	cp.StartAPIServer(t)
	back := time.Now()
	// Under kubeadm the controller manager loses its leader lease in such an
	// outage, exits and is started again by kubelet; the one here, without
	// leader election, would keep a stale lease informer (see
	// RestartControllerManager).
	cp.RestartControllerManager(t)

	late, _ := d.pod("late-" + node)
	c.waitMirror(t, "late-"+node, "created", 60*time.Second, func(*v1.Pod) bool { return true })
	t.Logf("late pod mirrored %v after the apiserver was back", time.Since(back).Round(time.Millisecond))
	c.waitMirrorLike(t, late, 30*time.Second)
	n := c.waitNode(t, "Ready after the outage", 60*time.Second, func(n *v1.Node) bool {
		return nodeCondition(n, v1.NodeReady).Status == v1.ConditionTrue
	})
	t.Logf("node Ready %v after the apiserver was back (Ready condition since %v)", time.Since(back).Round(time.Millisecond), nodeCondition(n, v1.NodeReady).LastTransitionTime)
	web, _ = d.pod("web-" + node)
	m := c.waitMirrorLike(t, web, 30*time.Second)
	if m.UID != webMirror {
		t.Errorf("web's mirror was replaced during the outage: UID %s, was %s", m.UID, webMirror)
	}

	// No duplicates: one mirror per local pod, each of its current UID.
	pods, err := c.cs.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pods.Items {
		got = append(got, p.Namespace+"/"+p.Name+"="+p.Annotations["kubernetes.io/config.mirror"])
	}
	want := []string{"default/late-" + node + "=" + string(late.UID), "default/web-" + node + "=" + string(web.UID)}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("pods bound to the node: %v, want %v", got, want)
	}

	// The events of the late pod, recorded while the apiserver was away.
	d.poll("the late pod's Started event", 30*time.Second, func() (bool, string) {
		evs, err := c.cs.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": "late-" + node, "reason": "Started"}.String(),
		})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.UID == late.UID && e.Source.Host == node {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d Started events, none about UID %s from host %s", len(evs.Items), late.UID, node)
	})
	out := cp.Kubectl(t, "get", "events", "-n", "default", "--field-selector", "involvedObject.name=late-"+node)
	if !strings.Contains(out, "Started") {
		t.Errorf("kubectl get events shows no Started event of late-%s:\n%s", node, out)
	}
}

// manifestRemoved: removing a manifest removes the pod and its mirror.
func (c *mirrorCluster) manifestRemoved(t *testing.T) {
	c.d.removeManifest("late.yaml")
	c.d.waitGone("late-"+node, 30*time.Second)
	c.d.poll("the late pod's mirror to be gone", 30*time.Second, func() (bool, string) {
		m, err := c.cs.CoreV1().Pods("default").Get(t.Context(), "late-"+node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("%v %v", mirrorSummary(m), err)
	})
}

// stoppingTerminating: while a removed pod stops (its container ignores
// SIGTERM, so it takes its grace period), its mirror shows Terminating on
// the apiserver, as kubelet's pods do: a deletionTimestamp with the pod's
// grace, while the local pod, marked alike, still runs; then it is gone.
func (c *mirrorCluster) stoppingTerminating(t *testing.T) {
	const grace = 8
	d := c.d
	d.writeManifest("slowstop.yaml", sleeperManifest("slowstop", grace, `trap "" TERM; while true; do sleep 1; done`))
	local := d.waitPod("slowstop-"+node, 60*time.Second, "Running", running)
	c.waitMirrorLike(t, local, 30*time.Second)
	d.removeManifest("slowstop.yaml")
	m := c.waitMirror(t, "slowstop-"+node, "Terminating", grace*time.Second, func(m *v1.Pod) bool {
		return m.DeletionTimestamp != nil
	})
	if g := m.DeletionGracePeriodSeconds; g == nil || *g != grace {
		t.Errorf("mirror deletionGracePeriodSeconds = %v, want %d", g, grace)
	}
	// The local pod is still there, stopping: the mirror was marked before
	// the pod was gone, not deleted after.
	if p, err := d.pod("slowstop-" + node); err != nil || p.DeletionTimestamp == nil {
		t.Errorf("local pod while its mirror is Terminating: %v (err %v), want it there with a deletionTimestamp", mirrorSummary(p), err)
	}
	d.waitGone("slowstop-"+node, 30*time.Second)
	d.poll("the slowstop pod's mirror to be gone", 30*time.Second, func() (bool, string) {
		m, err := c.cs.CoreV1().Pods("default").Get(t.Context(), "slowstop-"+node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("%v %v", mirrorSummary(m), err)
	})
}

// restartPolicyNever: the mirror of a pod with restartPolicy Never that
// has completed is recreated when deleted (kubelet leaves it deleted), with
// the pod's Succeeded status; the pod does not run again.
func (c *mirrorCluster) restartPolicyNever(t *testing.T) {
	d := c.d
	d.writeManifest("once.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: once
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["true"]
`)
	local := d.waitPod("once-"+node, 60*time.Second, "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	m := c.waitMirrorLike(t, local, 30*time.Second)
	c.cp.Kubectl(t, "delete", "pod", "once-"+node, "--timeout=30s")
	c.waitMirror(t, "once-"+node, "recreated", 30*time.Second, func(n *v1.Pod) bool { return n.UID != m.UID })
	m = c.waitMirrorLike(t, local, 30*time.Second)
	after, _ := d.pod("once-" + node)
	if cs := containerStatus(after, "main"); after.Status.Phase != v1.PodSucceeded || cs.RestartCount != 0 || containerID(after, "main") != containerID(local, "main") {
		t.Errorf("local pod after its mirror was deleted: %s, container %s restarts %d; want Succeeded, %s, 0",
			after.Status.Phase, containerID(after, "main"), cs.RestartCount, containerID(local, "main"))
	}
}

// podvisorStopped: with podvisor stopped the lease is no longer renewed and
// the node lifecycle controller marks the Node NotReady, while the pods
// keep running; podvisor started again makes the Node Ready and the
// mirrors Ready again, the pods untouched.
func (c *mirrorCluster) podvisorStopped(t *testing.T) {
	d := c.d
	web, _ := d.pod("web-" + node)
	id := containerID(web, "main")
	pid := d.taskPID(id)
	once, _ := d.pod("once-" + node)

	d.stop(syscall.SIGTERM)
	stopped := time.Now()
	n := c.waitNode(t, "NotReady", nodeMonitorGracePeriod+40*time.Second, func(n *v1.Node) bool {
		return nodeCondition(n, v1.NodeReady).Status != v1.ConditionTrue
	})
	t.Logf("node Ready=%s (%s) %v after podvisor stopped", nodeCondition(n, v1.NodeReady).Status,
		nodeCondition(n, v1.NodeReady).Reason, time.Since(stopped).Round(time.Millisecond))
	// The controller also marks the pods on the node not ready.
	c.waitMirror(t, "web-"+node, "not Ready", 30*time.Second, func(m *v1.Pod) bool { return !podReady(m) })
	if st := c.taskStatus(t, id); st != containerd.Running || d.taskPID(id) != pid {
		t.Errorf("web's task with podvisor stopped: %s pid %d, want running pid %d", st, d.taskPID(id), pid)
	}

	d.start()
	restarted := time.Now()
	c.waitNode(t, "Ready again", 60*time.Second, func(n *v1.Node) bool { return nodeCondition(n, v1.NodeReady).Status == v1.ConditionTrue })
	t.Logf("node Ready %v after podvisor started again", time.Since(restarted).Round(time.Millisecond))
	after, _ := d.pod("web-" + node)
	c.waitMirrorLike(t, after, 30*time.Second)
	c.waitMirrorLike(t, once, 30*time.Second)
	if containerID(after, "main") != id || d.taskPID(id) != pid || containerStatus(after, "main").RestartCount != containerStatus(web, "main").RestartCount {
		t.Errorf("web after podvisor's restart: container %s pid %d restarts %d; before: %s pid %d restarts %d", containerID(after, "main"),
			d.taskPID(id), containerStatus(after, "main").RestartCount, id, pid, containerStatus(web, "main").RestartCount)
	}
}

// waitNode polls the Node until cond holds.
func (c *mirrorCluster) waitNode(t *testing.T, what string, timeout time.Duration, cond func(*v1.Node) bool) *v1.Node {
	t.Helper()
	var n *v1.Node
	c.d.poll("node "+what, timeout, func() (bool, string) {
		var err error
		n, err = c.cs.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cond(n), fmt.Sprintf("conditions %+v", n.Status.Conditions)
	})
	return n
}

// waitMirror polls the mirror pod name until it exists and cond holds.
func (c *mirrorCluster) waitMirror(t *testing.T, name, what string, timeout time.Duration, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var m *v1.Pod
	c.d.poll("mirror "+name+" "+what, timeout, func() (bool, string) {
		var err error
		m, err = c.cs.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cond(m), mirrorSummary(m)
	})
	return m
}

// waitMirrorLike waits until local's mirror is as kubelet makes it and has
// local's status (the local pod's status must not change meanwhile).
func (c *mirrorCluster) waitMirrorLike(t *testing.T, local *v1.Pod, timeout time.Duration) *v1.Pod {
	t.Helper()
	var (
		m *v1.Pod
		n *v1.Node
	)
	c.d.poll("mirror of "+local.Name+" like the local pod", timeout, func() (bool, string) {
		var err error
		// The node may be registered after the pod runs locally.
		if n, err = c.cs.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		m, err = c.cs.CoreV1().Pods(local.Namespace).Get(t.Context(), local.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if diff := mirrorDiff(m, local, n.UID); diff != "" {
			return false, diff + "; " + mirrorSummary(m)
		}
		return true, ""
	})
	return m
}

// mirrorDiff says how m is not local's mirror as kubelet makes it, with
// local's status; "" when it is.
func mirrorDiff(m, local *v1.Pod, nodeUID types.UID) string {
	var diffs []string
	for k, want := range map[string]string{
		"kubernetes.io/config.mirror": string(local.UID),
		"kubernetes.io/config.hash":   string(local.UID),
		"kubernetes.io/config.source": "file",
	} {
		if got := m.Annotations[k]; got != want {
			diffs = append(diffs, fmt.Sprintf("annotation %s = %q, want %q", k, got, want))
		}
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node, UID: nodeUID, Controller: ptrTo(true)}
	if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].String() != owner.String() {
		diffs = append(diffs, fmt.Sprintf("owners %v, want %v", m.OwnerReferences, owner))
	}
	if m.Spec.NodeName != node || m.DeletionTimestamp != nil {
		diffs = append(diffs, fmt.Sprintf("nodeName %q deletionTimestamp %v", m.Spec.NodeName, m.DeletionTimestamp))
	}
	if m.Status.Phase != local.Status.Phase || podReady(m) != podReady(local) {
		diffs = append(diffs, fmt.Sprintf("phase %s ready %v, want %s ready %v", m.Status.Phase, podReady(m), local.Status.Phase, podReady(local)))
	}
	if len(m.Status.ContainerStatuses) != len(local.Status.ContainerStatuses) {
		diffs = append(diffs, fmt.Sprintf("%d container statuses, want %d", len(m.Status.ContainerStatuses), len(local.Status.ContainerStatuses)))
	} else {
		for i, lc := range local.Status.ContainerStatuses {
			mc := m.Status.ContainerStatuses[i]
			if mc.ContainerID != lc.ContainerID || mc.Ready != lc.Ready || mc.RestartCount != lc.RestartCount || stateName(mc.State) != stateName(lc.State) {
				diffs = append(diffs, fmt.Sprintf("container %s: %s %s ready %v restarts %d, want %s %s ready %v restarts %d", lc.Name,
					mc.ContainerID, stateName(mc.State), mc.Ready, mc.RestartCount, lc.ContainerID, stateName(lc.State), lc.Ready, lc.RestartCount))
			}
		}
	}
	return strings.Join(diffs, "; ")
}

func mirrorSummary(m *v1.Pod) string {
	if m == nil {
		return "no pod"
	}
	return fmt.Sprintf("mirror uid %s phase %s ready %v deleting %v", m.UID, m.Status.Phase, podReady(m), m.DeletionTimestamp != nil)
}

func stateName(s v1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return fmt.Sprintf("terminated(%d)", s.Terminated.ExitCode)
	case s.Waiting != nil:
		return "waiting(" + s.Waiting.Reason + ")"
	}
	return "none"
}

func nodeCondition(n *v1.Node, t v1.NodeConditionType) v1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.NodeCondition{}
}

// taskStatus is the status of a container's task in the daemon's namespace.
func (c *mirrorCluster) taskStatus(t *testing.T, id string) containerd.ProcessStatus {
	t.Helper()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(c.d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	ctr, err := cl.LoadContainer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := task.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st.Status
}

func ptrTo[T any](v T) *T { return &v }

func ptrStr[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
