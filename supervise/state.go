package supervise

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/podvisor/podvisor/cni"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podRecord is what podvisor keeps on disk for each pod, in
// <state-dir>/pods/<uid>/record.json, so that a restarted podvisor adopts
// running pods with their restart counts and last states. It is written
// atomically (temp file and rename) after every change.
type podRecord struct {
	UID       types.UID `json:"uid"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	// Pod is the last good spec this pod was started from.
	Pod       *v1.Pod                     `json:"pod"`
	Created   time.Time                   `json:"created"`
	StartTime *time.Time                  `json:"startTime,omitempty"`
	Sandbox   *sandboxRecord              `json:"sandbox,omitempty"`
	Init      map[string]*containerRecord `json:"init,omitempty"`
	Apps      map[string]*containerRecord `json:"containers,omitempty"`
}

// sandboxRecord describes the pod's shared namespaces and network.
type sandboxRecord struct {
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
	// Done marks an init container that completed successfully.
	Done bool `json:"done,omitempty"`
	// Rerun marks an init container that completed in a sandbox since
	// lost (a reboot): it runs again, as kubelet re-runs init containers
	// in a new sandbox.
	Rerun bool `json:"rerun,omitempty"`
}

func (r *podRecord) fullName() string { return r.Namespace + "/" + r.Name }

func recordDir(stateDir string, uid types.UID) string {
	return filepath.Join(stateDir, "pods", string(uid))
}

// saveRecord writes r unless it equals last (the bytes of the previous
// save) and returns what was written.
func saveRecord(stateDir string, r *podRecord, last []byte) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return last, fmt.Errorf("save pod record: %w", err)
	}
	if bytes.Equal(b, last) {
		return last, nil
	}
	if err := writeRecord(stateDir, r.UID, b); err != nil {
		return last, err
	}
	return b, nil
}

func writeRecord(stateDir string, uid types.UID, b []byte) error {
	dir := recordDir(stateDir, uid)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("save pod record: %w", err)
	}
	tmp := filepath.Join(dir, ".record.json.tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("save pod record: %w", err)
	}
	_, werr := f.Write(b)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("save pod record: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "record.json")); err != nil {
		return fmt.Errorf("save pod record: %w", err)
	}
	return nil
}

// loadRecords reads every pod record in the state dir. Unreadable records
// are returned as errors beside the good ones.
func loadRecords(stateDir string) (map[types.UID]*podRecord, []error) {
	out := map[types.UID]*podRecord{}
	entries, err := os.ReadDir(filepath.Join(stateDir, "pods"))
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, []error{fmt.Errorf("read pod records: %w", err)}
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(stateDir, "pods", e.Name(), "record.json")
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
		out[r.UID] = &r
	}
	return out, errs
}

func removeRecord(stateDir string, uid types.UID) error {
	if err := os.RemoveAll(recordDir(stateDir, uid)); err != nil {
		return fmt.Errorf("remove pod record: %w", err)
	}
	return nil
}
