package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/podvisor/podvisor/test/controlplane"
	"github.com/podvisor/podvisor/test/testenv"
)

// Figures given in the issue for kubelet 1.37 on this kind of machine
// (2 cores), not measured here.
const (
	kubeletMirrorReadyMS   = 470
	kubeletKubeadmReadyzMS = 5500
	kubeletKubeadmMirrorMS = 21000
)

// mirrorRun is one measured run of the mirror phase: offsets from the
// manifest's rename into the manifests dir.
type mirrorRun struct {
	// FirstMS is the container's first instruction (its hostPath file's
	// mtime), on this host.
	FirstMS float64 `json:"first_instruction_ms"`
	// CreatedMS is when the watch first saw the mirror pod in the
	// apiserver, ReadyMS when it first saw it with Ready=True.
	CreatedMS float64 `json:"mirror_created_ms"`
	ReadyMS   float64 `json:"mirror_ready_ms"`
}

// mirrorPhase is the -mirror phase's result: the warm case (a) and the
// kubeadm control plane from cold (b).
type mirrorPhase struct {
	Runs []mirrorRun `json:"runs,omitempty"`
	// Medians over Runs.
	FirstMS   float64 `json:"first_instruction_ms,omitempty"`
	CreatedMS float64 `json:"mirror_created_ms,omitempty"`
	ReadyMS   float64 `json:"mirror_ready_ms,omitempty"`
	// NodeReadyMS is podvisor's start (with the apiserver already ready)
	// to its Node Ready in the apiserver.
	NodeReadyMS float64      `json:"node_ready_ms,omitempty"`
	Kubeadm     []kubeadmRun `json:"kubeadm,omitempty"`
}

// runMirror measures, with an apiserver ready and podvisor registered as
// node bench, how long a manifest written takes to show as a Ready mirror
// pod in the apiserver, seen through a watch; then the kubeadm case.
func runMirror(ctx context.Context, o options, env *testenv.Env, dir, bin string, rec *recorder) (_ *mirrorPhase, err error) {
	arts, err := controlplane.Find()
	if err != nil {
		return nil, fmt.Errorf("control plane (make controlplane builds it): %w", err)
	}
	res := &mirrorPhase{}
	if o.mirrorRuns > 0 {
		if err := runMirrorWarm(ctx, o, env, dir, bin, arts, res); err != nil {
			return nil, err
		}
	}
	for r := range o.kubeadmRuns {
		kr, err := runKubeadm(ctx, env, filepath.Join(dir, fmt.Sprintf("kubeadm-r%d", r)), bin, arts, rec, o)
		if err != nil {
			return nil, fmt.Errorf("kubeadm run %d: %w", r+1, err)
		}
		res.Kubeadm = append(res.Kubeadm, *kr)
		logf("kubeadm run %d: import pass %7.1f ms  /readyz %7.1f ms  four mirrors Running 1/1 %7.1f ms", r+1, kr.ImportPassMS, kr.ReadyzMS, kr.MirrorsMS)
	}
	return res, nil
}

func runMirrorWarm(ctx context.Context, o options, env *testenv.Env, dir, bin string, arts *controlplane.Artifacts, res *mirrorPhase) (err error) {
	cp, err := controlplane.New(ctx, arts, controlplane.Options{NodeName: benchNode, Dir: filepath.Join(dir, "cp")})
	if err != nil {
		return err
	}
	defer func() {
		if serr := cp.Stop(); serr != nil {
			err = errors.Join(err, fmt.Errorf("stop control plane: %w", serr))
		}
	}()
	began := time.Now()
	if err := cp.Run(ctx); err != nil {
		return err
	}
	logf("control plane ready at %s in %v (logs in %s)", cp.Server, time.Since(began).Round(time.Millisecond), cp.Dir)
	cs, err := kubeClient(cp.AdminKubeconfig)
	if err != nil {
		return err
	}

	pv := &pvCase{env: env, bin: bin, dir: filepath.Join(dir, "mirror-pv"), logLevel: o.logLevel, ns: "bench-mirror", logPath: o.mirrorLog("mirror"),
		args: []string{"--kubeconfig", cp.KubeletKubeconfig, "--node-ip", "127.0.0.1"}}
	defer func() {
		if serr := pv.stop(ctx); serr != nil {
			err = errors.Join(err, serr)
		}
		if err != nil {
			logf("podvisor log (%s):\n%s", pv.logFile(), testenv.Tail(pv.logFile(), 30))
		}
		removeNamespaceDirs(pv.namespace())
	}()
	t0 := time.Now()
	if err := pv.start(ctx); err != nil {
		return err
	}
	err = pollUntil(ctx, 60*time.Second, 20*time.Millisecond, "node "+benchNode+" Ready in the apiserver", func() (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, benchNode, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				return c.Status == v1.ConditionTrue, fmt.Errorf("Ready %s: %s", c.Status, c.Message)
			}
		}
		return false, errors.New("no Ready condition")
	})
	if err != nil {
		return err
	}
	res.NodeReadyMS = msSince(t0, time.Now())
	logf("podvisor start → node %s Ready in the apiserver: %.0f ms", benchNode, res.NodeReadyMS)

	logf("warm-up: mirrored pod (image import), not measured")
	if _, err := measureMirror(ctx, pv, cs, "mirror-warmup"); err != nil {
		return fmt.Errorf("mirror warm-up: %w", err)
	}
	var first, created, ready []float64
	for r := range o.mirrorRuns {
		mr, err := measureMirror(ctx, pv, cs, fmt.Sprintf("mirror-r%d", r))
		if err != nil {
			return fmt.Errorf("mirror run %d: %w", r+1, err)
		}
		res.Runs = append(res.Runs, *mr)
		first, created, ready = append(first, mr.FirstMS), append(created, mr.CreatedMS), append(ready, mr.ReadyMS)
		logf("mirror run %d: first instruction %6.1f ms  mirror created %6.1f ms  mirror Ready %6.1f ms", r+1, mr.FirstMS, mr.CreatedMS, mr.ReadyMS)
	}
	res.FirstMS, res.CreatedMS, res.ReadyMS = median(first), median(created), median(ready)
	return nil
}

// measureMirror renames one busybox manifest into podvisor's manifests dir
// and watches its mirror pod until it is Ready, then removes the manifest
// and waits until the pod and its mirror are gone.
func measureMirror(ctx context.Context, pv *pvCase, cs kubernetes.Interface, name string) (_ *mirrorRun, err error) {
	mirror := name + "-" + benchNode
	hostDir := filepath.Join(pv.hostRoot, name)
	if err := os.WriteFile(filepath.Join(pv.staging, name+".yaml"), []byte(podManifest(name, hostDir)), 0o644); err != nil {
		return nil, fmt.Errorf("write manifest: %w", err)
	}
	defer func() {
		if cerr := pv.remove(ctx, []string{name}); cerr != nil {
			err = errors.Join(err, cerr)
		}
		if cerr := waitMirrorGone(ctx, cs, mirror); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()

	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	synced := make(chan struct{})
	type seen struct {
		created, ready time.Time
		err            error
	}
	done := make(chan seen, 1)
	go func() {
		var s seen
		lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", metav1.NamespaceDefault, fields.OneTermEqualSelector("metadata.name", mirror))
		_, s.err = watchtools.UntilWithSync(wctx, lw, &v1.Pod{},
			func(cache.Store) (bool, error) { close(synced); return false, nil },
			func(ev watch.Event) (bool, error) {
				now := time.Now()
				pod, ok := ev.Object.(*v1.Pod)
				if !ok || ev.Type == watch.Deleted {
					return false, nil
				}
				if s.created.IsZero() {
					s.created = now
				}
				if podReady(pod) {
					s.ready = now
					return true, nil
				}
				return false, nil
			})
		done <- s
	}()
	select {
	case <-synced:
	case s := <-done:
		return nil, fmt.Errorf("watch pod %s: %v", mirror, s.err)
	}

	t0 := time.Now()
	if err := os.Rename(filepath.Join(pv.staging, name+".yaml"), filepath.Join(pv.manifests, name+".yaml")); err != nil {
		return nil, fmt.Errorf("rename manifest: %w", err)
	}
	lat, err := waitStarted(ctx, []string{filepath.Join(hostDir, startedFile)}, t0, startTimeout(1), pv.alive)
	if err != nil {
		return nil, err
	}
	s := <-done
	if s.err != nil {
		return nil, fmt.Errorf("mirror %s not Ready in the apiserver: %w", mirror, s.err)
	}
	return &mirrorRun{
		FirstMS:   float64(lat[0]) / float64(time.Millisecond),
		CreatedMS: msSince(t0, s.created),
		ReadyMS:   msSince(t0, s.ready),
	}, nil
}

// waitMirrorGone polls until the apiserver no longer has the mirror pod.
func waitMirrorGone(ctx context.Context, cs kubernetes.Interface, mirror string) error {
	ctx = context.WithoutCancel(ctx)
	return pollUntil(ctx, 30*time.Second, 20*time.Millisecond, "mirror "+mirror+" deleted", func() (bool, error) {
		_, err := cs.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, mirror, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// mirrorLog is where the mirror phase's podvisor named name logs: in
// -mirror-log-dir when set, else in its own dir (removed at the end).
func (o options) mirrorLog(name string) string {
	if o.mirrorLogDir == "" {
		return ""
	}
	return filepath.Join(o.mirrorLogDir, "podvisor-"+name+".log")
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	// The benchmark's own requests must not queue behind client-go's
	// default rate limit (5/s).
	cfg.QPS, cfg.Burst = 100, 200
	return kubernetes.NewForConfig(cfg)
}
