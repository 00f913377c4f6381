package status

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// RolloutAnnotation, on a pod, says it runs a revision other than its
// manifest file's: rolled back automatically (a revision that did not
// become Ready in time) or by `podvisor rollout undo`. It holds why, and
// goes away when the file changes again.
const RolloutAnnotation = "podvisor.io/rolled-back"

// The phases of a Rollout, as kubectl rollout status words them.
const (
	RolloutProgressing = "Progressing" // the file's revision must still prove Ready
	RolloutComplete    = "Complete"    // the running revision is the file's
	RolloutRolledBack  = "RolledBack"  // an older revision runs until the file changes
)

// Rollout is what podvisor knows of one pod's revisions: the local API's
// answer to GET /pods/{name}/rollout.
type Rollout struct {
	// Pod is "namespace/name".
	Pod string `json:"pod"`
	// Phase is one of the Rollout* phases.
	Phase string `json:"phase"`
	// Message says why, for a person.
	Message string `json:"message,omitempty"`
	// Revision is the running revision; FileRevision the manifest file's.
	Revision     int `json:"revision"`
	FileRevision int `json:"fileRevision"`
	// Deadline is when a Progressing revision is rolled back unless it
	// has been Ready for MinReady.
	Deadline *time.Time    `json:"deadline,omitempty"`
	MinReady time.Duration `json:"minReady,omitempty"`
	// Revisions are oldest first.
	Revisions []RolloutRevision `json:"revisions"`
}

// RolloutRevision is one revision of a pod: one content of its manifest
// document.
type RolloutRevision struct {
	Revision int `json:"revision"`
	// Hash is the pod's UID for that content.
	Hash string `json:"hash"`
	// ChangeCause is the kubernetes.io/change-cause annotation, as
	// kubectl rollout history shows it.
	ChangeCause string    `json:"changeCause,omitempty"`
	Created     time.Time `json:"created"`
	// Outcome is Complete (it was Ready), RolledBack (it was not, in
	// time), or empty (not known yet, or not watched).
	Outcome string `json:"outcome,omitempty"`
	Message string `json:"message,omitempty"`
	// Status is a rolled back revision's last pod status, kept for
	// inspection.
	Status *v1.PodStatus `json:"status,omitempty"`
}
