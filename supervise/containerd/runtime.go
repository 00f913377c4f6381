package containerd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/containerd/v2/pkg/protobuf"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"github.com/distribution/reference"
	"github.com/moby/sys/signal"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podvisor/podvisor/internal/images"
	"github.com/podvisor/podvisor/supervise"
	"golang.org/x/sync/singleflight"
	v1 "k8s.io/api/core/v1"
)

// Options configures a Runtime.
type Options struct {
	// Log gets the warnings about the files that configure registries
	// (hosts.toml); nil discards them.
	Log *slog.Logger
	// Namespace is the containerd namespace podvisor owns (the client's
	// default namespace); events are filtered by it.
	Namespace string
	// Snapshotter defaults to overlayfs.
	Snapshotter string
	// LogDriver is the binary the shims run to write container logs.
	LogDriver string
	// LogMaxSize and LogMaxFiles are the rotation of each log (see
	// crilog.Policy; zero is its default).
	LogMaxSize  int64
	LogMaxFiles int
	// PullProgressDeadline cuts a pull that received no byte for so long
	// (default DefaultPullProgressDeadline); a pull that keeps receiving is
	// never cut, however long it takes.
	PullProgressDeadline time.Duration
	// PullReportInterval is how often a running pull reports the bytes
	// it received (supervise.PullReporter; default 10 s).
	PullReportInterval time.Duration
	// RequestTimeout bounds each other containerd call of EnsureImage (the
	// image lookup, unpack); 0: none. supervise.Bounded leaves EnsureImage
	// to it, so that a pull is bounded by its progress only.
	RequestTimeout time.Duration
	// RegistryConfigDir is the root of containerd's hosts.toml layout
	// (<dir>/<host>/hosts.toml: mirrors, CAs, plain HTTP); "": none.
	RegistryConfigDir string
	// Credentials looks up the node-wide credentials of a pull, tried
	// after the pod's imagePullSecrets (supervise.WithPullSecrets); nil
	// and no pull secrets: anonymous.
	Credentials Credentials
	// StdinDir holds the stdin fifos of containers with stdin: true.
	StdinDir string
	// PodInit is the binary that runs as `BINARY pod-init`, PID 1 of the
	// pods that share their process namespace (the log driver's small
	// binary, or podvisor); PodInitRoot the directory made for its root.
	PodInit     string
	PodInitRoot string
	// RuntimeClasses are the runtime classes a pod's runtimeClassName
	// names, by name; a pod without one runs with DefaultRuntimeType.
	RuntimeClasses map[string]RuntimeClass
	// CDI injects the containers' CDI devices (ContainerConfig.CDIDevices);
	// nil: a container given devices is refused.
	CDI DeviceInjector
	// SeccompProfileRoot is the directory of the Localhost seccomp
	// profiles (kubelet's --seccomp-profile-root).
	SeccompProfileRoot string
}

// Runtime implements supervise.Runtime, and its TaskLister, on a
// containerd client.
type Runtime struct {
	client *client.Client
	opts   Options

	mu       sync.Mutex
	unpacked map[string]bool          // image digests known to be unpacked
	images   map[string]client.Image  // by image ID (repo digest), as ensured
	configs  map[string]ocispec.Image // image configs by image target digest
	execs    map[string]execTarget    // by container ID, from its first exec
	// created holds the containers Create made until Start (or Remove)
	// takes them.
	created map[string]client.Container
	// users holds the identity Create gave each container until
	// ContainerUser takes it (user_linux.go).
	users map[string]specs.User
	// configRead makes one read of an image's config at a time per
	// digest: the containers created meanwhile take its answer.
	configRead singleflight.Group
	// unpackCheck makes one check (and unpack) of an image per digest at
	// a time.
	unpackCheck singleflight.Group
	// identities remembers the users found in images' /etc/passwd.
	identities identities
	// userns remembers what containerd and the OCI runtime can do for
	// pods in user namespaces.
	userns usernsSupport
	// hostsWarn tells what is wrong with the trust of hosts.toml files,
	// once while it lasts.
	hostsWarn *trustWarnings
	// instance labels the leases this Runtime takes, so that Collect
	// tells them from a killed podvisor's without a window between a
	// lease's creation and its being known.
	instance string
}

var (
	_ supervise.Runtime    = (*Runtime)(nil)
	_ supervise.TaskLister = (*Runtime)(nil)
)

// New returns a Runtime on c, whose default namespace is opts.Namespace.
func New(c *client.Client, opts Options) *Runtime {
	if opts.Snapshotter == "" {
		opts.Snapshotter = "overlayfs"
	}
	if opts.PullProgressDeadline <= 0 {
		opts.PullProgressDeadline = DefaultPullProgressDeadline
	}
	if opts.PullReportInterval <= 0 {
		opts.PullReportInterval = 10 * time.Second
	}
	return &Runtime{client: c, opts: opts, unpacked: map[string]bool{}, images: map[string]client.Image{}, configs: map[string]ocispec.Image{}, execs: map[string]execTarget{}, created: map[string]client.Container{}, hostsWarn: newTrustWarnings(opts.Log), instance: randomID()}
}

// EnsureImage finds (or pulls) and unpacks the container's image according
// to its pull policy. With Always and a registry that cannot be reached (a
// network error or a stalled pull), a local image is used with a warning:
// an air-gapped box must boot. A registry that answers with an error (401,
// 403, 404) fails the pull even with a local image.
func (r *Runtime) EnsureImage(ctx context.Context, c *v1.Container) (_ supervise.Image, err error) {
	defer markUnavailable(&err)
	ref, err := images.Normalize(c.Image)
	if err != nil {
		return supervise.Image{}, err
	}
	res := supervise.Image{Ref: ref}
	lctx, cancel := r.callContext(ctx)
	img, getErr := r.client.GetImage(lctx, ref)
	cancel()
	if getErr != nil && !errdefs.IsNotFound(getErr) {
		return res, fmt.Errorf("look up image %s: %w", ref, getErr)
	}
	present := getErr == nil
	if present && supervise.IsImageVolumePull(ctx) && !r.artifactFetched(ctx, img) {
		present = false // an artifact whose layers were never fetched
	}
	if !present && c.ImagePullPolicy == v1.PullNever {
		return res, supervise.ErrImageNeverPull
	}
	if c.ImagePullPolicy == v1.PullAlways || !present {
		start := time.Now()
		pulled, n, err := r.pull(ctx, ref)
		switch {
		case err == nil:
			img = pulled
			d := time.Since(start).Round(time.Millisecond)
			res.Pulled = fmt.Sprintf("Successfully pulled image %q in %s (%s including waiting). Image size: %d bytes.", c.Image, d, d, imageSize(ctx, pulled, n))
		case ctx.Err() != nil:
			return res, fmt.Errorf("pull image %s: %w", ref, err)
		case present && isNetworkError(err):
			res.Warning = fmt.Sprintf("pull of %s failed, using the local image (imagePullPolicy Always, registry unreachable): %v", ref, err)
		default:
			return res, fmt.Errorf("pull image %s: %w", ref, err)
		}
	}
	ctx, cancel = r.callContext(ctx)
	defer cancel()
	// Checking that an image is unpacked walks its layers' snapshots; once
	// an image (by digest) is known to be unpacked, skip that. A snapshot
	// removed behind podvisor's back makes container creation fail, which
	// forgets the digest, so the next attempt unpacks again.
	digest := img.Target().Digest.String()
	res.ID = repoDigest(ref, digest)
	// The image object already kept for this name and digest is the same
	// image, and it has read the layers' IDs (RootFS) that the check
	// below and Create's snapshot need: keep it rather than read them
	// again for each container.
	r.mu.Lock()
	if known := r.images[res.ID]; known != nil {
		img = known
	} else {
		r.images[res.ID] = img
	}
	r.mu.Unlock()
	if !r.isUnpacked(digest) {
		check := func(ctx context.Context) error {
			ok, err := img.IsUnpacked(ctx, r.opts.Snapshotter)
			if err != nil || !ok {
				// An OCI artifact has no layers to unpack: say so
				// rather than how its unpack fails.
				if aerr := checkImageConfig(ctx, r.client.ContentStore(), img.Target(), ref); errors.Is(aerr, errArtifact) {
					if supervise.IsImageVolumePull(ctx) {
						return checkArtifact(ctx, r.client.ContentStore(), img.Target(), ref)
					}
					return aerr
				}
			}
			if err != nil {
				return fmt.Errorf("check image %s: %w", ref, err)
			}
			if !ok {
				if err := r.withLease(ctx, "unpack", func(ctx context.Context) error { return img.Unpack(ctx, r.opts.Snapshotter) }); err != nil {
					return fmt.Errorf("unpack image %s: %w", ref, err)
				}
			}
			r.markUnpacked(digest, true)
			return nil
		}
		// One check (and unpack) of a digest at a time: the pods started
		// meanwhile take its answer.
		key := digest
		if supervise.IsImageVolumePull(ctx) {
			key += " volume" // an artifact passes there only
		}
		if _, err := doShared(ctx, &r.unpackCheck, key, func() (struct{}, error) { return struct{}{}, check(ctx) }); err != nil {
			return res, err
		}
	}
	return res, nil
}

func (r *Runtime) isUnpacked(digest string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unpacked[digest]
}

func (r *Runtime) markUnpacked(digest string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		r.unpacked[digest] = true
	} else {
		delete(r.unpacked, digest)
	}
}

// image returns the very image EnsureImage found, by its ID: a re-import
// of the same name in between must not change what the container runs.
func (r *Runtime) image(ctx context.Context, im supervise.Image) (client.Image, error) {
	r.mu.Lock()
	img := r.images[im.ID]
	r.mu.Unlock()
	if img != nil {
		return img, nil
	}
	img, err := r.client.GetImage(ctx, im.Ref)
	if err != nil {
		return nil, err
	}
	if id := repoDigest(im.Ref, img.Target().Digest.String()); id != im.ID {
		return nil, fmt.Errorf("image %s changed to %s since it was checked", im.ID, id)
	}
	return img, nil
}

// imageConfig is img.Spec, read once per image: the config is found from
// the image's target digest (its manifest, or its index and this
// platform's manifest), content-addressed, so what was read for a digest
// holds for as long as the digest. Each read is a walk of the manifest and
// a blob read from containerd's content store, and a JSON decode.
func (r *Runtime) imageConfig(ctx context.Context, img client.Image) (ocispec.Image, error) {
	d := img.Target().Digest.String()
	r.mu.Lock()
	ic, ok := r.configs[d]
	r.mu.Unlock()
	if ok {
		return ic, nil
	}
	return doShared(ctx, &r.configRead, d, func() (ocispec.Image, error) {
		ic, err := img.Spec(ctx)
		if err != nil {
			return ic, err
		}
		r.mu.Lock()
		r.configs[d] = ic
		r.mu.Unlock()
		return ic, nil
	})
}

// doShared runs f for key one call at a time in g: calls made meanwhile
// take its answer. A call whose shared answer failed while its own ctx is
// live runs its own f (the failure may be the first caller's context).
func doShared[T any](ctx context.Context, g *singleflight.Group, key string, f func() (T, error)) (T, error) {
	v, err, shared := g.Do(key, func() (any, error) { return f() })
	if err != nil && shared && ctx.Err() == nil {
		return f()
	}
	return v.(T), err
}

func repoDigest(ref, digest string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return digest
	}
	return named.Name() + "@" + digest
}

// Create creates the containerd container (spec and snapshot) without
// starting it. The image's stop signal is fixed in a label.
func (r *Runtime) Create(ctx context.Context, cfg supervise.ContainerConfig) (err error) {
	defer markUnavailable(&err)
	if cfg.PodInit {
		return r.createPodInit(ctx, cfg)
	}
	class, err := r.podClass(cfg.Pod)
	if err != nil {
		return err
	}
	rtType, rtOpts := class.runtime()
	img, err := r.image(ctx, cfg.Image)
	if err != nil {
		return fmt.Errorf("image %s: %w", cfg.Image.Ref, err)
	}
	ic, err := r.imageConfig(ctx, img)
	if err != nil {
		return fmt.Errorf("read image config: %w", err)
	}
	opts, err := specOpts(cfg, ic.Config.Entrypoint, ic.Config.Cmd, ic.Config.User, &r.identities, r.opts.SeccompProfileRoot)
	if err != nil {
		return err
	}
	labels := make(map[string]string, len(cfg.Labels)+1)
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	labels[supervise.LabelStopSignal] = strconv.Itoa(int(containerStopSignal(cfg.Container, ic.Config.StopSignal)))
	if cfg.Container.Stdin {
		labels[labelStdin] = "true"
	}
	// A runtime class's base spec comes first: it replaces containerd's
	// default spec.
	all := append(class.specBase(), []oci.SpecOpts{withImageConfig(ic.Config)}...)
	all = append(all, opts...)
	all = append(all, withCDIDevices(r.opts.CDI, cfg.CDIDevices), withBlockDevices(cfg.BlockDevices))
	userns, err := r.userNSOpts(ctx, cfg)
	if err != nil {
		return err
	}
	all = append(all, userns...)
	var user specs.User
	all = append(all, captureUser(&user))
	err = r.withLease(ctx, "create", func(ctx context.Context) error {
		ctr, err := r.client.NewContainer(ctx, cfg.ID,
			client.WithImage(img),
			r.newSnapshot(cfg, img),
			client.WithRuntime(rtType, rtOpts),
			client.WithContainerLabels(labels),
			client.WithNewSpec(all...),
		)
		if err == nil {
			r.mu.Lock()
			r.created[cfg.ID] = ctr
			r.mu.Unlock()
			r.rememberUser(cfg.ID, user)
		}
		return err
	})
	if errors.Is(err, supervise.ErrContainerConfig) {
		return err
	}
	if err != nil {
		r.markUnpacked(img.Target().Digest.String(), false)
		return fmt.Errorf("create container: %w", err)
	}
	return nil
}

// Start creates and starts the container's task with its output going to
// logPath through podvisor's log driver.
func (r *Runtime) Start(ctx context.Context, id, logPath string) (err error) {
	defer markUnavailable(&err)
	// The container Create made holds the record containerd returned: a
	// start just after it (a new pod's, a restart's) needs no read of it.
	r.mu.Lock()
	ctr := r.created[id]
	delete(r.created, id)
	r.mu.Unlock()
	if ctr == nil {
		if ctr, err = r.client.LoadContainer(ctx, id); err != nil {
			return fmt.Errorf("load container %s: %w", id, err)
		}
	}
	io := cio.NullIO // a pod init's
	if logPath != "" {
		if io, err = r.taskIO(ctx, ctr, id, logPath); err != nil {
			return err
		}
	}
	task, err := ctr.NewTask(ctx, io)
	if err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	if err := task.Start(ctx); err != nil {
		cctx, cancel := cleanupContext(ctx)
		task.Delete(cctx, client.WithProcessKill)
		cancel()
		return fmt.Errorf("start task: %w", err)
	}
	return nil
}

// State reports the container's task state. A container with a task (the
// relist's usual case) costs one request, answered from the shim: the
// task's status holds its pid and exit; the container is looked up only
// when there is no task.
func (r *Runtime) State(ctx context.Context, id string) (_ supervise.ContainerState, err error) {
	defer markUnavailable(&err)
	var st supervise.ContainerState
	res, err := r.client.TaskService().Get(ctx, &tasks.GetRequest{ContainerID: id})
	err = errgrpc.ToNative(err)
	if errdefs.IsNotFound(err) {
		_, err := r.client.ContainerService().Get(ctx, id)
		if errdefs.IsNotFound(err) {
			return st, nil
		}
		if err != nil {
			return st, fmt.Errorf("load container %s: %w", id, err)
		}
		st.Exists = true
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("task status %s: %w", id, err)
	}
	st, err = taskState(res.GetProcess())
	if err != nil {
		return st, fmt.Errorf("task %s: %w", id, err)
	}
	return st, nil
}

// TaskStates lists every task of the namespace in one request (the
// relist's), answered by containerd from its shims. A task whose status
// containerd could not get (unknown) is left out, as containerd itself
// leaves out one whose shim is gone: the supervisor then asks State.
func (r *Runtime) TaskStates(ctx context.Context) (_ map[string]supervise.ContainerState, err error) {
	defer markUnavailable(&err)
	res, err := r.client.TaskService().List(ctx, &tasks.ListTasksRequest{})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", errgrpc.ToNative(err))
	}
	out := make(map[string]supervise.ContainerState, len(res.GetTasks()))
	for _, p := range res.GetTasks() {
		if st, err := taskState(p); err == nil {
			out[p.GetID()] = st
		}
	}
	return out, nil
}

// taskState is the state of a container whose task's process is p. An
// unknown status (containerd could not ask the shim) is an error: no exit.
func taskState(p *tasktypes.Process) (supervise.ContainerState, error) {
	st := supervise.ContainerState{Exists: true, HasTask: true, Pid: p.GetPid()}
	// As client.Task.Status names it.
	switch status := client.ProcessStatus(strings.ToLower(p.GetStatus().String())); status {
	case client.Running, client.Paused, client.Pausing:
		st.Running = true
	case client.Stopped:
		st.ExitCode, st.ExitedAt = int32(p.GetExitStatus()), protobuf.FromTimestamp(p.GetExitedAt())
	case client.Created:
		// Created but never started: not running, no exit.
	default:
		return st, fmt.Errorf("status %q", status)
	}
	return st, nil
}

// Info returns the containerd record of a container (labels, creation).
func (r *Runtime) Info(ctx context.Context, id string) (_ supervise.ContainerInfo, err error) {
	defer markUnavailable(&err)
	ctr, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return supervise.ContainerInfo{}, fmt.Errorf("load container %s: %w", id, err)
	}
	info, err := ctr.Info(ctx, client.WithoutRefreshedMetadata)
	if err != nil {
		return supervise.ContainerInfo{}, fmt.Errorf("container %s: %w", id, err)
	}
	return supervise.ContainerInfo{ID: id, Labels: info.Labels, CreatedAt: info.CreatedAt}, nil
}

// List returns every container labelled with a pod UID. A container whose
// record cannot be read for another reason than its removal meanwhile
// fails the list (tried listAttempts times): adoption must never take a
// pod whose containers run for one that is gone, and remove its sandbox
// and cgroup under them.
func (r *Runtime) List(ctx context.Context) (_ []supervise.ContainerInfo, err error) {
	defer markUnavailable(&err)
	for attempt := 1; ; attempt++ {
		out, err := r.list(ctx)
		if err == nil || attempt == listAttempts {
			return out, err
		}
		t := time.NewTimer(time.Duration(attempt) * 200 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, err
		}
	}
}

// listAttempts is how many times List tries before it fails.
const listAttempts = 3

func (r *Runtime) list(ctx context.Context) ([]supervise.ContainerInfo, error) {
	ctrs, err := r.client.Containers(ctx, fmt.Sprintf("labels.%q", supervise.LabelPodUID))
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out := make([]supervise.ContainerInfo, 0, len(ctrs))
	for _, c := range ctrs {
		info, err := c.Info(ctx, client.WithoutRefreshedMetadata)
		if errdefs.IsNotFound(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("container %s: %w", c.ID(), err)
		}
		out = append(out, supervise.ContainerInfo{ID: c.ID(), Labels: info.Labels, CreatedAt: info.CreatedAt})
	}
	return out, nil
}

// Stop sends the container's stop signal (its label) and waits up to grace
// for it to exit, then kills every process of it and waits for that.
func (r *Runtime) Stop(ctx context.Context, id string, grace time.Duration) (err error) {
	defer markUnavailable(&err)
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
		sig := r.stopSignal(ctx, ctr)
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
	if err := task.Kill(ctx, syscall.SIGKILL, client.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
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

// stopSignal is the signal recorded on the container when it was created;
// for a container made by an older podvisor without that label, its
// image's STOPSIGNAL as it is now; else SIGTERM.
func (r *Runtime) stopSignal(ctx context.Context, ctr client.Container) syscall.Signal {
	labels, err := ctr.Labels(ctx)
	if err == nil {
		if s, err := signal.ParseSignal(labels[supervise.LabelStopSignal]); err == nil {
			return s
		}
	}
	img, err := ctr.Image(ctx)
	if err != nil {
		return syscall.SIGTERM
	}
	ic, err := img.Spec(ctx)
	if err != nil {
		return syscall.SIGTERM
	}
	return stopSignal(ic.Config.StopSignal)
}

// Remove deletes the container's task, the container and its snapshot.
func (r *Runtime) Remove(ctx context.Context, id string) (err error) {
	defer markUnavailable(&err)
	r.forgetExec(id)
	r.mu.Lock()
	delete(r.created, id)
	r.mu.Unlock()
	defer func() {
		if err == nil {
			r.removeStdin(id)
		}
	}()
	ctr, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("load container %s: %w", id, err)
	}
	if task, err := ctr.Task(ctx, nil); err == nil {
		if _, err := task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete task %s: %w", id, err)
		}
	} else if !errdefs.IsNotFound(err) {
		return fmt.Errorf("load task %s: %w", id, err)
	}
	if err := ctr.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete container %s: %w", id, err)
	}
	return nil
}

// cleanupContext returns a context for cleanup that survives the
// cancellation of ctx, bounded by a timeout.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
}

var errStream = errors.New("containerd event stream closed")

func randomID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// markUnavailable marks an error of a containerd that did not answer
// (down, restarting: gRPC Unavailable) as supervise.ErrRuntimeUnavailable.
func markUnavailable(err *error) {
	if *err != nil && errdefs.IsUnavailable(*err) && !errors.Is(*err, supervise.ErrRuntimeUnavailable) {
		*err = fmt.Errorf("%w: %w", supervise.ErrRuntimeUnavailable, *err)
	}
}
