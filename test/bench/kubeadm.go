package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/yaml"

	"github.com/podvisor/podvisor/supervise"
	"github.com/podvisor/podvisor/test/controlplane"
	"github.com/podvisor/podvisor/test/testenv"
)

// kubeadmNamespace is the containerd namespace of the kubeadm runs; its
// images are deleted before each, so each imports the archives anew.
const kubeadmNamespace = "bench-kubeadm"

// kubeadmPods are the static pods kubeadm's manifests name.
var kubeadmPods = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// kubeadmRun is one run of the kubeadm control plane from cold: offsets
// from podvisor's start, with no state, no image in its containerd
// namespace and no apiserver.
type kubeadmRun struct {
	// Imports are the image archives as podvisor logs them imported, in
	// order; ImportPassMS is the last of them (the end of the first
	// import pass).
	Imports      []archiveImport `json:"imports"`
	ImportPassMS float64         `json:"import_pass_ms"`
	// AnsweredMS is the apiserver's first answer to /readyz, whatever it
	// said, ReadyzMS its first ok (polled every 20 ms).
	AnsweredMS float64 `json:"answered_ms"`
	ReadyzMS   float64 `json:"readyz_ms"`
	// NodeRegisteredMS is podvisor's "node registered" log line;
	// NodeRetries counts its failed node-status tries before it (each
	// followed by a back-off wait).
	NodeRegisteredMS float64 `json:"node_registered_ms"`
	NodeRetries      int     `json:"node_retries"`
	// MirrorRefusals counts the mirror creations the apiserver refused
	// (podvisor's log: before /readyz, kube-system's PriorityClasses may
	// not exist yet), each followed by podvisor's refused-mirror back-off.
	MirrorRefusals int `json:"mirror_refusals"`
	// MirrorsMS is when the watch (from the apiserver's first answer)
	// first saw all four mirrors Running with their container ready.
	MirrorsMS float64 `json:"mirrors_running_ms"`
	// FloorMS is the earliest the four mirrors can be Running 1/1: the
	// latest of each pod's task start plus its ReadyDelaySec, plus
	// kubeadmSlack (issue 19's bound).
	FloorMS float64 `json:"floor_ms"`
	// Pods holds, per static pod, its container's task start, when
	// podvisor's API first showed it Ready (polled every 20 ms), and when
	// its mirror was first seen, and first seen Running 1/1.
	Pods map[string]kubeadmPod `json:"pods"`
}

type archiveImport struct {
	File string  `json:"file"`
	MS   float64 `json:"ms"`
}

type kubeadmPod struct {
	// ReadyDelaySec is what its manifest's probes allow before the pod
	// can be Ready (readyDelay).
	ReadyDelaySec   float64 `json:"ready_delay_s"`
	TaskStartMS     float64 `json:"task_start_ms"`
	LocalReadyMS    float64 `json:"local_ready_ms"`
	MirrorSeenMS    float64 `json:"mirror_seen_ms"`
	MirrorRunningMS float64 `json:"mirror_running_ms"`
}

// runKubeadm generates kubeadm's files into dir/root (`kubeadm --rootfs`,
// loopback edits: controlplane.KubeadmRoot), starts podvisor on its
// manifests dir with kubelet.conf, a fresh state dir and an images dir with
// the four control-plane archives, and measures podvisor's start → the
// apiserver's /readyz ok → four mirror pods Running 1/1.
func runKubeadm(ctx context.Context, env *testenv.Env, dir, bin string, arts *controlplane.Artifacts, rec *recorder, o options) (_ *kubeadmRun, err error) {
	if err := controlplane.CheckKubeadmPorts(); err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "root")
	k8s := filepath.Join(root, "etc", "kubernetes")
	ka := &controlplane.KubeadmRoot{Kubeadm: arts.Kubeadm, Root: root}
	began := time.Now()
	// kubeadm's kubelet check port: nothing here runs that check.
	if err := ka.WriteControlPlane(ctx, benchNode, 10248); err != nil {
		return nil, err
	}
	logf("kubeadm: PKI, kubeconfigs and manifests in %s (%v, not measured)", root, time.Since(began).Round(time.Millisecond))
	if err := deleteImages(ctx, env.Address, kubeadmNamespace); err != nil {
		return nil, err
	}
	var archives []string
	for _, p := range kubeadmPods {
		archives = append(archives, filepath.Join(arts.ImagesDir, p+".tar"))
	}
	pv := &pvCase{env: env, bin: bin, dir: filepath.Join(dir, "pv"), logLevel: o.logLevel, ns: kubeadmNamespace, logPath: o.mirrorLog(filepath.Base(dir)),
		images: archives, manifests: filepath.Join(k8s, "manifests"),
		args: []string{"--kubeconfig", filepath.Join(k8s, "kubelet.conf"), "--node-ip", "127.0.0.1"}}
	defer func() {
		stopped := time.Now()
		if serr := pv.stop(ctx); serr != nil {
			err = errors.Join(err, serr)
		}
		logf("kubeadm: control plane removed, podvisor stopped in %v", time.Since(stopped).Round(time.Millisecond))
		if derr := deleteImages(context.WithoutCancel(ctx), env.Address, kubeadmNamespace); derr != nil {
			err = errors.Join(err, derr)
		}
		if err != nil {
			logf("podvisor log (%s):\n%s", pv.logFile(), testenv.Tail(pv.logFile(), 30))
		}
		removeNamespaceDirs(kubeadmNamespace)
	}()
	readyz, err := readyzClient(filepath.Join(k8s, "pki", "ca.crt"))
	if err != nil {
		return nil, err
	}
	// super-admin.conf (system:masters, authorized before RBAC is
	// bootstrapped): admin.conf needs the binding kubeadm init creates
	// later.
	cs, err := kubeClient(filepath.Join(k8s, "super-admin.conf"))
	if err != nil {
		return nil, err
	}
	res := &kubeadmRun{Pods: map[string]kubeadmPod{}}
	answered := make(chan struct{}) // closed at the apiserver's first answer
	type watched struct {
		seen, running map[string]time.Time
		at            time.Time // all four Running 1/1
		err           error
	}
	mirrors := make(chan watched, 1)
	wctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	go func() {
		w := watched{seen: map[string]time.Time{}, running: map[string]time.Time{}}
		defer func() { mirrors <- w }()
		select {
		case <-answered:
		case <-wctx.Done():
			w.err = wctx.Err()
			return
		}
		lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", metav1.NamespaceSystem, fields.Everything())
		_, w.err = watchtools.UntilWithSync(wctx, lw, &v1.Pod{}, nil, func(ev watch.Event) (bool, error) {
			now := time.Now()
			pod, ok := ev.Object.(*v1.Pod)
			if !ok || ev.Type == watch.Deleted || pod.Annotations["kubernetes.io/config.mirror"] == "" {
				return false, nil
			}
			name := strings.TrimSuffix(pod.Name, "-"+benchNode)
			if _, ok := w.seen[name]; !ok {
				w.seen[name] = now
			}
			if _, ok := w.running[name]; !ok && pod.Status.Phase == v1.PodRunning && allReady(pod) {
				w.running[name] = now
			}
			for _, p := range kubeadmPods {
				if _, ok := w.running[p]; !ok {
					return false, nil
				}
			}
			w.at = now
			return true, nil
		})
	}()

	t0 := time.Now()
	if err := pv.start(ctx); err != nil {
		return nil, err
	}
	localReady := make(chan map[string]time.Time, 1)
	go func() { localReady <- pv.readySince(wctx) }()
	// pv.start returns once podvisor's API answers, well before any image
	// is imported: nothing of the control plane can answer yet.
	err = pollUntil(ctx, 3*time.Minute, 20*time.Millisecond, "the apiserver's /readyz", func() (bool, error) {
		if err := pv.alive(); err != nil {
			return false, err
		}
		ok, code, err := readyzOK(ctx, readyz)
		if code != 0 && res.AnsweredMS == 0 {
			res.AnsweredMS = msSince(t0, time.Now())
			close(answered)
		}
		return ok, err
	})
	if err != nil {
		return nil, err
	}
	res.ReadyzMS = msSince(t0, time.Now())
	logf("kubeadm: apiserver's first answer after %.0f ms, /readyz ok after %.0f ms", res.AnsweredMS, res.ReadyzMS)
	w := <-mirrors
	if w.err != nil {
		return nil, fmt.Errorf("four mirror pods Running 1/1 (running: %v): %w", slices.Collect(maps.Keys(w.running)), w.err)
	}
	seen, running := w.seen, w.running
	res.MirrorsMS = msSince(t0, w.at)
	// The last pod's local Ready can reach the watch before the next poll.
	var local map[string]time.Time
	select {
	case local = <-localReady:
	case <-time.After(5 * time.Second):
		cancel()
		local = <-localReady
	}

	for _, l := range logged(pv.logFile(), t0) {
		switch l.msg {
		case "imported image archive":
			res.Imports = append(res.Imports, archiveImport{File: filepath.Base(l.attr("file")), MS: l.ms})
			res.ImportPassMS = l.ms
		case "node status":
			if res.NodeRegisteredMS == 0 {
				res.NodeRetries++
			}
		case "node registered":
			res.NodeRegisteredMS = l.ms
		case "apiserver refused the mirror pod":
			res.MirrorRefusals++
		}
	}
	pods, err := containerPods(ctx, pv.client)
	if err != nil {
		return nil, err
	}
	for id, at := range rec.taskStarts(kubeadmNamespace, t0) {
		if name, ok := pods[id]; ok {
			kp := res.Pods[name]
			kp.TaskStartMS = msSince(t0, at)
			res.Pods[name] = kp
		}
	}
	for _, p := range kubeadmPods {
		kp := res.Pods[p]
		delay, err := manifestReadyDelay(filepath.Join(pv.manifests, p+".yaml"))
		if err != nil {
			return nil, err
		}
		kp.ReadyDelaySec = delay.Seconds()
		kp.MirrorSeenMS, kp.MirrorRunningMS = msSince(t0, seen[p]), msSince(t0, running[p])
		if at, ok := local[p]; ok {
			kp.LocalReadyMS = msSince(t0, at)
		}
		res.Pods[p] = kp
	}
	res.FloorMS = kubeadmFloor(res.Pods)
	return res, nil
}

// kubeadmSlack is what issue 19 allows above the latest container start
// plus its initial delay for the four mirrors to show Running 1/1.
const kubeadmSlack = 1500 * time.Millisecond

// kubeadmFloor is the latest TaskStartMS + ReadyDelaySec over pods, plus
// kubeadmSlack (ms); 0 when a pod's task start is unknown.
func kubeadmFloor(pods map[string]kubeadmPod) float64 {
	latest := 0.0
	for _, kp := range pods {
		if kp.TaskStartMS <= 0 {
			return 0
		}
		latest = max(latest, kp.TaskStartMS+kp.ReadyDelaySec*1000)
	}
	if latest == 0 {
		return 0
	}
	return latest + float64(kubeadmSlack/time.Millisecond)
}

// readyDelay is how long after its containers start a pod can be Ready at
// the earliest, by its probes: a container with a startup probe runs no
// other probe, and is not ready, before that probe first succeeds, at
// initialDelaySeconds at the earliest; a readiness probe's first run is
// at its own initialDelaySeconds. The pod's delay is its slowest
// container's.
func readyDelay(pod *v1.Pod) time.Duration {
	var d time.Duration
	for _, c := range pod.Spec.Containers {
		var cd int32
		if p := c.StartupProbe; p != nil {
			cd = p.InitialDelaySeconds
		}
		if p := c.ReadinessProbe; p != nil {
			cd = max(cd, p.InitialDelaySeconds)
		}
		d = max(d, time.Duration(cd)*time.Second)
	}
	return d
}

// manifestReadyDelay is readyDelay of the pod in a manifest file.
func manifestReadyDelay(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var pod v1.Pod
	if err := yaml.Unmarshal(b, &pod); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return readyDelay(&pod), nil
}

// readySince polls podvisor's API every 20 ms until every kubeadm pod has
// been seen Running with its containers ready, or ctx ends, and returns
// when each (named without the node suffix) was first seen so.
func (p *pvCase) readySince(ctx context.Context) map[string]time.Time {
	out := map[string]time.Time{}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if list, err := p.api.Pods(ctx); err == nil {
			now := time.Now()
			for i := range list.Items {
				pod := &list.Items[i]
				name := strings.TrimSuffix(pod.Name, "-"+benchNode)
				if _, ok := out[name]; !ok && pod.Status.Phase == v1.PodRunning && allReady(pod) {
					out[name] = now
				}
			}
			if len(out) == len(kubeadmPods) {
				return out
			}
		}
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
	}
}

func allReady(p *v1.Pod) bool {
	if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if !c.Ready {
			return false
		}
	}
	return true
}

// readyzClient trusts the cluster CA alone, and asks anonymously, as
// kubeadm's probe does.
func readyzClient(caFile string) (*http.Client, error) {
	return controlplane.CAClient(caFile, 2*time.Second)
}

// readyzOK asks kubeadm's apiserver's /readyz; code is its HTTP status, 0
// when it did not answer.
func readyzOK(ctx context.Context, c *http.Client) (ok bool, code int, err error) {
	body, code, err := controlplane.Get(ctx, c, "https://127.0.0.1:6443/readyz")
	if err != nil && code == 0 {
		return false, 0, err
	}
	if code != http.StatusOK || string(body) != "ok" {
		return false, code, fmt.Errorf("/readyz %d %.200s", code, body)
	}
	return true, code, nil
}

// logLine is one line of podvisor's log (slog's text format, time
// first): its offset from t0, message and the rest.
type logLine struct {
	ms        float64
	msg, rest string
}

// attr is the value of key=value in the line (unquoted values only).
func (l logLine) attr(key string) string {
	if _, v, ok := strings.Cut(l.rest, " "+key+"="); ok {
		return strings.Fields(v)[0]
	}
	return ""
}

// logged reads podvisor's log; lines it cannot parse are skipped.
func logged(logFile string, t0 time.Time) []logLine {
	f, err := os.Open(logFile)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		ts, rest, _ := strings.Cut(line, " ")
		ts, ok := strings.CutPrefix(ts, "time=")
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			continue
		}
		_, after, ok := strings.Cut(rest, "msg=")
		if !ok {
			continue
		}
		msg, tail := after, ""
		if strings.HasPrefix(after, `"`) {
			if i := strings.Index(after[1:], `"`); i >= 0 {
				msg, tail = after[1:i+1], after[i+2:]
			}
		} else if m, t, ok := strings.Cut(after, " "); ok {
			msg, tail = m, " "+t
		}
		out = append(out, logLine{ms: msSince(t0, at), msg: msg, rest: tail})
	}
	return out
}

// containerPods maps each container of c's namespace to its pod's name
// without the node suffix.
func containerPods(ctx context.Context, c *client.Client) (map[string]string, error) {
	ctrs, err := c.Containers(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, ctr := range ctrs {
		labels, err := ctr.Labels(ctx)
		if err != nil {
			continue
		}
		out[ctr.ID()] = strings.TrimSuffix(labels[supervise.LabelPodName], "-"+benchNode)
	}
	return out, nil
}

// deleteImages removes every image of namespace ns and waits for
// containerd's garbage collection, so that the next import starts from
// nothing.
func deleteImages(ctx context.Context, address, ns string) error {
	c, err := client.New(address, client.WithDefaultNamespace(ns))
	if err != nil {
		return fmt.Errorf("containerd client: %w", err)
	}
	defer c.Close()
	is := c.ImageService()
	imgs, err := is.List(ctx)
	if err != nil {
		return fmt.Errorf("list images: %w", err)
	}
	for _, img := range imgs {
		if err := is.Delete(ctx, img.Name, images.SynchronousDelete()); err != nil {
			return fmt.Errorf("delete image %s: %w", img.Name, err)
		}
	}
	// What the collection left would make the next import warmer than
	// cold: say so.
	blobs := 0
	if err := c.ContentStore().Walk(ctx, func(content.Info) error { blobs++; return nil }); err != nil {
		return fmt.Errorf("walk content: %w", err)
	}
	if blobs > 0 {
		logf("warning: %d content blobs stay in namespace %s after its images were deleted", blobs, ns)
	}
	return nil
}
