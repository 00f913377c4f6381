package supervise

import (
	"context"
	"errors"
	"fmt"
	"github.com/containerd/containerd/v2/core/containers"
	"sync"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/podvisor/podvisor/internal/crilog"
	v1 "k8s.io/api/core/v1"
)

// Labels podvisor puts on every containerd container it creates. They are
// enough to find a pod's containers after a restart even without the state
// dir.
const (
	labelPodUID        = "io.podvisor.pod.uid"
	labelPodName       = "io.podvisor.pod.name"
	labelPodNamespace  = "io.podvisor.pod.namespace"
	labelContainer     = "io.podvisor.container.name"
	labelContainerType = "io.podvisor.container.type" // "init" or "app"
	labelRestartCount  = "io.podvisor.container.restart-count"
	labelSandboxID     = "io.podvisor.sandbox.id"
)

const runtimeName = "io.containerd.runc.v2"

// runtime wraps the containerd client with what pod workers need.
type runtime struct {
	client      *containerd.Client
	snapshotter string
	// logDriver is the absolute path of the binary the shim runs as the
	// log driver (podvisor itself).
	logDriver  string
	logMaxSize int64
	// pullTimeout bounds a registry pull, so an unreachable registry does
	// not hold a pod on an air-gapped box for long.
	pullTimeout time.Duration

	mu          sync.Mutex
	unpackedSet map[string]bool // image digests known to be unpacked
}

func (r *runtime) unpacked(digest string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unpackedSet[digest]
}

func (r *runtime) markUnpacked(digest string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unpackedSet == nil {
		r.unpackedSet = map[string]bool{}
	}
	if ok {
		r.unpackedSet[digest] = true
	} else {
		delete(r.unpackedSet, digest)
	}
}

// normalizeImage turns a pod's image into containerd's name as docker
// does: "busybox" is "docker.io/library/busybox:latest".
func normalizeImage(image string) (string, error) {
	named, err := reference.ParseDockerRef(image)
	if err != nil {
		return "", fmt.Errorf("invalid image name %q: %w", image, err)
	}
	return named.String(), nil
}

// imageResult is an image ready for a container.
type imageResult struct {
	Image   containerd.Image
	Ref     string
	ImageID string
	Warning string // set when a pull failed but the local image is used
}

// errImageNeverPull is returned for a missing image with pull policy Never.
var errImageNeverPull = errors.New("image is not present and imagePullPolicy is Never")

// ensureImage finds (or pulls) and unpacks the container's image according
// to its pull policy. With Always and an unreachable registry, a local image
// is used with a warning: an air-gapped box must boot.
func (r *runtime) ensureImage(ctx context.Context, c *v1.Container) (*imageResult, error) {
	ref, err := normalizeImage(c.Image)
	if err != nil {
		return nil, err
	}
	res := &imageResult{Ref: ref}
	img, getErr := r.client.GetImage(ctx, ref)
	if getErr != nil && !errdefs.IsNotFound(getErr) {
		return nil, fmt.Errorf("look up image %s: %w", ref, getErr)
	}
	present := getErr == nil
	pull := c.ImagePullPolicy == v1.PullAlways || (!present && c.ImagePullPolicy != v1.PullNever)
	if !present && c.ImagePullPolicy == v1.PullNever {
		return nil, errImageNeverPull
	}
	if pull {
		pctx, cancel := context.WithTimeout(ctx, r.pullTimeout)
		pulled, err := r.client.Pull(pctx, ref, containerd.WithPullUnpack, containerd.WithPullSnapshotter(r.snapshotter))
		cancel()
		switch {
		case err == nil:
			img = pulled
		case present:
			res.Warning = fmt.Sprintf("pull of %s failed, using the local image (imagePullPolicy Always, registry unreachable): %v", ref, err)
		default:
			return nil, fmt.Errorf("pull image %s: %w", ref, err)
		}
	}
	// Checking that an image is unpacked walks its layers' snapshots; once
	// an image (by digest) is known to be unpacked, skip that. A snapshot
	// removed behind podvisor's back makes container creation fail, which
	// forgets the digest, so the next attempt unpacks again.
	digest := img.Target().Digest.String()
	if !r.unpacked(digest) {
		unpacked, err := img.IsUnpacked(ctx, r.snapshotter)
		if err != nil {
			return nil, fmt.Errorf("check image %s: %w", ref, err)
		}
		if !unpacked {
			if err := img.Unpack(ctx, r.snapshotter); err != nil {
				return nil, fmt.Errorf("unpack image %s: %w", ref, err)
			}
		}
		r.markUnpacked(digest, true)
	}
	res.Image = img
	res.ImageID = repoDigest(ref, img.Target().Digest.String())
	return res, nil
}

func repoDigest(ref, digest string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return digest
	}
	return named.Name() + "@" + digest
}

// createSpec is what createContainer needs besides the image.
type createSpec struct {
	ID     string
	Labels map[string]string
	Spec   containerSpecInput
}

// createContainer creates the containerd container (spec and snapshot)
// without starting it.
func (r *runtime) createContainer(ctx context.Context, img *imageResult, cs createSpec) (containerd.Container, error) {
	ic, err := img.Image.Spec(ctx)
	if err != nil {
		return nil, fmt.Errorf("read image config: %w", err)
	}
	opts, err := specOpts(cs.Spec, ic.Config.Entrypoint, ic.Config.Cmd)
	if err != nil {
		return nil, err
	}
	all := append([]oci.SpecOpts{oci.WithImageConfig(img.Image)}, opts...)
	ctr, err := r.client.NewContainer(ctx, cs.ID,
		containerd.WithImage(img.Image),
		containerd.WithSnapshotter(r.snapshotter),
		containerd.WithNewSnapshot(cs.ID, img.Image),
		containerd.WithRuntime(runtimeName, nil),
		containerd.WithContainerLabels(cs.Labels),
		containerd.WithNewSpec(all...),
	)
	if err != nil {
		r.markUnpacked(img.Image.Target().Digest.String(), false)
		return nil, fmt.Errorf("create container: %w", err)
	}
	return ctr, nil
}

// startTask creates and starts the container's task with its output going
// to logPath through podvisor's log driver.
func (r *runtime) startTask(ctx context.Context, ctr containerd.Container, logPath string) (containerd.Task, error) {
	io := cio.BinaryIO(r.logDriver, map[string]string{"log-driver": crilog.DriverArg(logPath, r.logMaxSize)})
	task, err := ctr.NewTask(ctx, io)
	if err != nil {
		return nil, fmt.Errorf("create task: %w", err)
	}
	if err := task.Start(ctx); err != nil {
		cctx, cancel := cleanupContext(ctx)
		task.Delete(cctx, containerd.WithProcessKill)
		cancel()
		return nil, fmt.Errorf("start task: %w", err)
	}
	return task, nil
}

// taskState is what podvisor needs to know of a container's task.
type taskState struct {
	Exists     bool // the containerd container exists
	HasTask    bool
	Running    bool
	Pid        uint32
	ExitCode   int32
	ExitedAt   time.Time
	StopSignal syscall.Signal
}

func (r *runtime) state(ctx context.Context, id string) (taskState, error) {
	var st taskState
	ctr, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("load container %s: %w", id, err)
	}
	st.Exists = true
	task, err := ctr.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("load task %s: %w", id, err)
	}
	st.HasTask = true
	st.Pid = task.Pid()
	s, err := task.Status(ctx)
	if err != nil {
		return st, fmt.Errorf("task status %s: %w", id, err)
	}
	switch s.Status {
	case containerd.Running, containerd.Paused, containerd.Pausing:
		st.Running = true
	case containerd.Stopped:
		st.ExitCode, st.ExitedAt = int32(s.ExitStatus), s.ExitTime
	case containerd.Created:
		// Created but never started: the caller treats it as not running.
	default:
		// Unknown: containerd could not ask the shim. That is no exit.
		return st, fmt.Errorf("task %s: status %q", id, s.Status)
	}
	return st, nil
}

// info returns the containerd record of a container (labels, creation).
func (r *runtime) info(ctx context.Context, id string) (containers.Container, error) {
	ctr, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return containers.Container{}, fmt.Errorf("load container %s: %w", id, err)
	}
	return ctr.Info(ctx, containerd.WithoutRefreshedMetadata)
}

// stop sends sig to the container's task and waits up to grace for it to
// exit, then kills every process of it and waits for that. A missing
// container or task is not an error.
func (r *runtime) stop(ctx context.Context, id string, sig syscall.Signal, grace time.Duration) error {
	ctr, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("load container %s: %w", id, err)
	}
	task, err := ctr.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("load task %s: %w", id, err)
	}
	// Wait before Kill so the exit cannot be missed.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exited, err := task.Wait(wctx)
	if err != nil {
		return fmt.Errorf("wait task %s: %w", id, err)
	}
	if grace > 0 {
		if err := task.Kill(ctx, sig); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("signal task %s: %w", id, err)
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-exited:
			return nil
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := task.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("kill task %s: %w", id, err)
	}
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-exited:
		return nil
	case <-t.C:
		return fmt.Errorf("task %s did not exit 10s after SIGKILL", id)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// remove deletes the container's task, the container and its snapshot.
// Missing pieces are not errors.
func (r *runtime) remove(ctx context.Context, id string) error {
	ctr, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("load container %s: %w", id, err)
	}
	if task, err := ctr.Task(ctx, nil); err == nil {
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete task %s: %w", id, err)
		}
	} else if !errdefs.IsNotFound(err) {
		return fmt.Errorf("load task %s: %w", id, err)
	}
	if err := ctr.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete container %s: %w", id, err)
	}
	return nil
}

// podContainers lists containerd containers labelled with a pod UID,
// grouped by it.
func (r *runtime) podContainers(ctx context.Context) (map[string][]containerd.Container, error) {
	ctrs, err := r.client.Containers(ctx, fmt.Sprintf("labels.%q", labelPodUID))
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out := map[string][]containerd.Container{}
	for _, c := range ctrs {
		labels, err := c.Labels(ctx)
		if err != nil {
			continue
		}
		out[labels[labelPodUID]] = append(out[labels[labelPodUID]], c)
	}
	return out, nil
}

// cleanupContext returns a context for cleanup that survives the
// cancellation of ctx, bounded by a timeout.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
}
