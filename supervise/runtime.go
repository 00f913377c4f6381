package supervise

import (
	"context"
	"errors"
	"io"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	v1 "k8s.io/api/core/v1"
)

// Labels podvisor puts on every container it creates. They are enough to
// find a pod's containers after a restart even without the state dir.
const (
	LabelPodUID        = "io.podvisor.pod.uid"
	LabelPodName       = "io.podvisor.pod.name"
	LabelPodNamespace  = "io.podvisor.pod.namespace"
	LabelContainer     = "io.podvisor.container.name"
	LabelContainerType = "io.podvisor.container.type" // "init" or "app"
	LabelRestartCount  = "io.podvisor.container.restart-count"
	LabelSandboxID     = "io.podvisor.sandbox.id"
	// LabelStopSignal is the signal that stops the container, fixed when
	// it is created (the image's STOPSIGNAL then, or SIGTERM), so a
	// re-tagged image never changes how a running container is stopped.
	LabelStopSignal = "io.podvisor.container.stop-signal"
)

// Runtime is everything supervise needs from the container runtime
// (containerd). The planner and executor are tested against a fake; the
// implementation on containerd is package supervise/containerd.
type Runtime interface {
	// EnsureImage finds, pulls or unpacks the container's image as its
	// pull policy says. ErrImageNeverPull: missing with policy Never.
	EnsureImage(ctx context.Context, c *v1.Container) (Image, error)
	// Create makes the container (spec and writable layer) without
	// starting it.
	Create(ctx context.Context, cfg ContainerConfig) error
	// Start starts the container's process with its output going to
	// logPath in CRI format ("": discarded, for a pod init).
	Start(ctx context.Context, id, logPath string) error
	// Stop sends the container's stop signal, waits up to grace for it to
	// exit, then kills every process of it. grace 0 kills at once. A
	// missing container or process is not an error.
	Stop(ctx context.Context, id string, grace time.Duration) error
	// Remove deletes the container's process, the container and its
	// writable layer. Missing pieces are not errors.
	Remove(ctx context.Context, id string) error
	// State reports what the runtime knows of a container. A container
	// that does not exist is a zero state with no error; an error means
	// the runtime could not tell (which is no exit).
	State(ctx context.Context, id string) (ContainerState, error)
	// Info returns a container's labels and creation time.
	Info(ctx context.Context, id string) (ContainerInfo, error)
	// List returns every container podvisor labelled with a pod UID.
	List(ctx context.Context) ([]ContainerInfo, error)
	// Events streams container exits and OOM kills until ctx ends or the
	// stream breaks (then errs yields why and events closes).
	Events(ctx context.Context) (events <-chan RuntimeEvent, errs <-chan error)
	// Import imports one image archive, read from archive, and returns
	// the names it gave; name is the archive's file name, after which an
	// image with a bare tag is named.
	Import(ctx context.Context, name string, archive io.Reader) ([]string, error)
	// Exec runs a process in a running container and returns its exit
	// code once it ends; ctx ending kills it.
	Exec(ctx context.Context, id string, p ExecProcess) (int, error)
	// Collect removes what an interrupted podvisor left in the runtime
	// with no owner (leases, unlabelled containers, shims serving no
	// task) and says what it removed. It runs before any pod is worked on.
	Collect(ctx context.Context) ([]string, error)
	// ReleaseShims ends what the runtime still runs for the given
	// sandboxes once none of their containers has a task.
	ReleaseShims(ctx context.Context, sandboxIDs []string) error
	// CollectShims ends what the runtime still runs for groups no
	// container belongs to any more, and says what it ended. The
	// supervisor calls it once adoption is done and after each pod's
	// removal.
	CollectShims(ctx context.Context) ([]string, error)
}

// TaskLister is a Runtime that can tell every task's state in one
// request. The supervisor's relist uses it, when the runtime has it, to
// wake only the workers whose containers changed (kubelet's PLEG) instead
// of every worker asking State for each of its containers.
type TaskLister interface {
	// TaskStates reports the state of every task in the runtime's
	// namespace, by container ID, as State would (Exists and HasTask
	// set). A container with no task is absent, and so is one whose
	// task's state the runtime could not tell: absence is never an exit,
	// only a reason to ask State. An error means nothing could be listed.
	TaskStates(ctx context.Context) (map[string]ContainerState, error)
}

// ErrContainerConfig marks a container the runtime refuses for its own
// settings (runAsNonRoot that cannot hold, say): kubelet's
// CreateContainerConfigError, retried with back-off like other starts.
var ErrContainerConfig = errors.New("container config refused")

// ErrImageNeverPull is returned for a missing image with pull policy Never.
var ErrImageNeverPull = errors.New("image is not present and imagePullPolicy is Never")

// Image is an image ready for a container.
type Image struct {
	Ref     string // normalised name, docker.io/library/busybox:latest
	ID      string // repo digest, as kubelet reports imageID
	Warning string // set when a pull failed and the local image is used
	Pulled  string // set when the image was pulled: kubelet's Pulled event message
}

// ContainerConfig is what a container is created from.
type ContainerConfig struct {
	ID        string
	Labels    map[string]string
	Image     Image
	Pod       *v1.Pod
	Container *v1.Container
	// Env is the container's resolved environment (KEY=VALUE, valueFrom
	// and envFrom resolved, $(VAR) expanded); nil: built from
	// Container.Env's values. It may hold Secret values: never logged.
	Env []string
	// Sandbox: the pod's shared namespaces and /dev/shm (empty for host
	// namespaces).
	SandboxID string
	NetNS     string
	IPCNS     string
	Shm       string
	Hostname  string
	Mounts    []specs.Mount
	// CgroupsPath is the container's cgroup, below the pod's.
	CgroupsPath string
	OOMScoreAdj int
	Resources   Resources
	// UserNS is the pod's user namespace (hostUsers: false); nil: the
	// host's.
	UserNS *UserNamespace
	// CDIDevices are the fully qualified CDI devices injected into the
	// container (vendor/class=name).
	CDIDevices []string
	// BlockDevices are the container's raw block volumes (volumeDevices).
	BlockDevices []BlockDevice
	// PIDNS is the pod's shared process namespace the container joins
	// (shareProcessNamespace); "": its own, or the host's with hostPID.
	PIDNS string
	// PodInit makes the container its pod's init, PID 1 of the process
	// namespace the pod's containers share, instead of one of them: it
	// runs podvisor's own init binary with no image (Image, Container, Env
	// and Mounts are unused), and is started with no log path.
	PodInit bool
}

// Resources are the cgroup limits of a pod or container, in kubelet's
// conversions.
type Resources struct {
	CPUShares   uint64 // always set (min 2)
	CPUQuota    int64  // µs per CPUPeriod; 0 = unlimited
	CPUPeriod   uint64 // µs
	MemoryLimit int64  // bytes; 0 = unlimited
}

// ContainerState is what the runtime knows of one container.
type ContainerState struct {
	Exists   bool // the container exists
	HasTask  bool // it has a process (running, exited or created)
	Running  bool
	Pid      uint32
	ExitCode int32
	ExitedAt time.Time // zero unless the process exited
}

// ContainerInfo is one container's identity as the runtime keeps it.
type ContainerInfo struct {
	ID        string
	Labels    map[string]string
	CreatedAt time.Time
}

// RuntimeEventType tells exits from OOM kills.
type RuntimeEventType int

// Runtime event types.
const (
	EventExit RuntimeEventType = iota + 1
	EventOOM
)

// RuntimeEvent is an exit or OOM kill of a container's main process.
type RuntimeEvent struct {
	Type        RuntimeEventType
	ContainerID string
}

// ExecProcess is a process to run in a container.
type ExecProcess struct {
	Args   []string
	Env    []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}
