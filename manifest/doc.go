// Package manifest reads a directory of Kubernetes Pod manifests and turns it
// into the desired set of static pods for this node.
//
// Contract:
//
//   - ParseFile decodes one file (YAML, possibly several documents, or JSON)
//     strictly into v1.Pod, checks every PodSpec field against podvisor's
//     field table (implemented, ignored with a warning, or rejected), applies
//     Kubernetes' defaults, validates, and gives each pod its static-pod
//     identity: name "<name>-<node>", UID derived from the decoded content,
//     the file path and the node name (never from defaults or timestamps).
//   - Every problem is a *FileError carrying the file, the line when it can
//     be found, and the field path; all of them wrap ErrInvalid unless they
//     are I/O errors.
//   - A file is all-or-nothing: any error in any of its documents makes the
//     file invalid. A Source then keeps emitting the file's last good pods,
//     marked with Pod.Err, until the file is fixed or removed.
//   - Load reads a directory once; Source watches it (fsnotify plus a periodic
//     relist) and sends a full Snapshot after every change. Both share one
//     code path.
//   - Pods handed out are never mutated afterwards; consumers may keep them.
//
// The package imports nothing else from podvisor except internal/version.
package manifest
