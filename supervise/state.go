package supervise

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/podvisor/podvisor/internal/atomicfile"
	"github.com/podvisor/podvisor/internal/layout"

	"github.com/podvisor/podvisor/cni"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podRecord is what podvisor keeps on disk for each pod, in
// <state-dir>/pods/<uid>/record.json, so that a restarted podvisor adopts
// running pods with their restart counts and last states. It is written
// atomically (internal/atomicfile) after every change.
type podRecord struct {
	UID       types.UID `json:"uid"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	// Pod is the last good spec this pod was started from.
	Pod       *v1.Pod                     `json:"pod"`
	Created   time.Time                   `json:"created"`
	StartTime *time.Time                  `json:"startTime,omitempty"`
	Sandbox   *Sandbox                    `json:"sandbox,omitempty"`
	Init      map[string]*containerRecord `json:"init,omitempty"`
	Apps      map[string]*containerRecord `json:"containers,omitempty"`
	// NodeStop, when set, is the stop the node decided (an eviction, a
	// shutdown): the pod is stopped, or stopping, until it starts again.
	NodeStop *nodeStopRecord `json:"nodeStop,omitempty"`
	// Evictions counts the pod's evictions in a row, for its back-off.
	Evictions int `json:"evictions,omitempty"`
	// Devices are the CDI devices each container got at admission, by
	// container name (devices.go); nil until the pod is admitted.
	Devices map[string][]string `json:"devices,omitempty"`
	// UserNS is the range of host IDs of the pod's user namespace
	// (hostUsers: false), kept for the pod's life: every sandbox of the
	// pod maps the same IDs, so its files stay its own.
	UserNS *idMapping `json:"userNamespace,omitempty"`
}

// Sandbox is the record of a pod's shared namespaces and network, as the
// Sandboxes that made it and the pod record keep it.
type Sandbox struct {
	ID      string            `json:"id"`
	NetNS   string            `json:"netns,omitempty"` // empty with hostNetwork
	IPCNS   string            `json:"ipcns,omitempty"` // empty with hostIPC
	Shm     string            `json:"shm,omitempty"`   // tmpfs for /dev/shm; empty with hostIPC
	IPs     []string          `json:"ips,omitempty"`
	Ports   []cni.PortMapping `json:"ports,omitempty"`
	Network bool              `json:"network,omitempty"` // CNI ADD succeeded
	Created time.Time         `json:"created"`
	// BootID is the host's boot the sandbox was made in.
	BootID string `json:"bootID,omitempty"`
	// UserNS is the pod's user namespace (hostUsers: false), which owns
	// its network and IPC namespaces.
	UserNS string `json:"userns,omitempty"`
	// PodInit is the container of the pod's init, PID 1 of the process
	// namespace its containers share (shareProcessNamespace), and PIDNS
	// that namespace, bind-mounted in the sandbox's directory. The init's
	// ID is recorded before its container is made.
	PodInit string `json:"podInit,omitempty"`
	PIDNS   string `json:"pidns,omitempty"`
}

// containerRecord is one container of the pod across its restarts.
type containerRecord struct {
	// ID is the containerd container of the current run; empty when none
	// exists (not started yet, or removed after it exited).
	ID           string    `json:"id,omitempty"`
	RestartCount int32     `json:"restartCount"`
	StartedAt    time.Time `json:"startedAt,omitempty"`
	Image        string    `json:"image,omitempty"`
	ImageID      string    `json:"imageID,omitempty"`
	// Terminated is the state of the last run once it has ended and no new
	// run has started; LastState is the run before the current one.
	Terminated *v1.ContainerStateTerminated `json:"terminated,omitempty"`
	LastState  *v1.ContainerStateTerminated `json:"lastState,omitempty"`
	// Started and Ready are the current run's probe results as last
	// known, to seed its probes after a podvisor restart.
	Started bool `json:"started,omitempty"`
	Ready   bool `json:"ready,omitempty"`
	// Done marks an init container that completed successfully.
	Done bool `json:"done,omitempty"`
	// Rerun marks an init container that completed in a sandbox since
	// lost (a reboot): it runs again, as kubelet re-runs init containers
	// in a new sandbox.
	Rerun bool `json:"rerun,omitempty"`
	// User is the identity the runtime gave the current (or last) run's
	// process, for its status (containeruser.go).
	User *v1.ContainerUser `json:"user,omitempty"`
}

func (r *podRecord) fullName() string { return r.Namespace + "/" + r.Name }

// containers calls f for every container record of the pod's spec, init
// containers first, in spec order.
func (r *podRecord) each(pod *v1.Pod, f func(ref ctrRef, c *v1.Container, cr *containerRecord)) {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		f(ctrRef{Type: containerTypeInit, Name: c.Name}, c, r.Init[c.Name])
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		f(ctrRef{Type: containerTypeApp, Name: c.Name}, c, r.Apps[c.Name])
	}
}

// container returns the record of ref.
func (r *podRecord) container(ref ctrRef) *containerRecord {
	if ref.Type == containerTypeInit {
		return r.Init[ref.Name]
	}
	return r.Apps[ref.Name]
}

// byID returns the record whose current run is container id, or nil.
func (r *podRecord) byID(id string) *containerRecord {
	for _, m := range []map[string]*containerRecord{r.Init, r.Apps} {
		for _, cr := range m {
			if cr.ID == id {
				return cr
			}
		}
	}
	return nil
}

// ensureContainers adds an empty record for every container of pod.
func (r *podRecord) ensureContainers(pod *v1.Pod) {
	if r.Init == nil {
		r.Init = map[string]*containerRecord{}
	}
	if r.Apps == nil {
		r.Apps = map[string]*containerRecord{}
	}
	for _, c := range pod.Spec.InitContainers {
		if r.Init[c.Name] == nil {
			r.Init[c.Name] = &containerRecord{}
		}
	}
	for _, c := range pod.Spec.Containers {
		if r.Apps[c.Name] == nil {
			r.Apps[c.Name] = &containerRecord{}
		}
	}
}

// saveRecord writes r unless it equals last (the bytes of the previous
// save) and returns what was written.
func saveRecord(l layout.Layout, r *podRecord, last []byte) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return last, fmt.Errorf("save pod record: %w", err)
	}
	if bytes.Equal(b, last) {
		return last, nil
	}
	if err := atomicfile.Write(l.RecordFile(string(r.UID)), b, 0o600); err != nil {
		return last, fmt.Errorf("save pod record: %w", err)
	}
	return b, nil
}

// loadRecords reads every pod record in the state dir. Unreadable records
// are returned as errors beside the good ones.
func loadRecords(l layout.Layout) (map[types.UID]*podRecord, []error) {
	out := map[types.UID]*podRecord{}
	entries, err := os.ReadDir(l.Records())
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, []error{fmt.Errorf("read pod records: %w", err)}
	}
	var errs []error
	for _, e := range entries {
		p := l.RecordFile(e.Name())
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read pod record %s: %w", p, err))
			continue
		}
		var r podRecord
		if err := json.Unmarshal(b, &r); err != nil || r.UID == "" {
			errs = append(errs, fmt.Errorf("decode pod record %s: %v", p, err))
			continue
		}
		if r.Pod == nil {
			r.Pod = placeholderPod(&r)
		}
		out[r.UID] = &r
	}
	return out, errs
}

func removeRecord(l layout.Layout, uid types.UID) error {
	if err := os.RemoveAll(l.PodDir(string(uid))); err != nil {
		return fmt.Errorf("remove pod record: %w", err)
	}
	return nil
}
