package layout

import (
	"fmt"
	"path/filepath"
)

// Layout holds the three roots.
type Layout struct {
	StateDir string
	RunDir   string
	LogDir   string
}

// Records is the directory holding one directory per pod.
func (l Layout) Records() string { return filepath.Join(l.StateDir, "pods") }

// PodDir is the pod's persistent directory.
func (l Layout) PodDir(uid string) string { return filepath.Join(l.Records(), uid) }

// RecordFile is the pod's record.
func (l Layout) RecordFile(uid string) string { return filepath.Join(l.PodDir(uid), "record.json") }

// PodFiles holds the pod's generated files and emptyDir volumes.
func (l Layout) PodFiles(uid string) string { return filepath.Join(l.PodDir(uid), "files") }

// TerminationDir holds one container run's termination-log.
func (l Layout) TerminationDir(uid, containerID string) string {
	return filepath.Join(l.PodDir(uid), "termination", containerID)
}

// TerminationLog is the file a container's terminationMessagePath is
// bound to.
func (l Layout) TerminationLog(uid, containerID string) string {
	return filepath.Join(l.TerminationDir(uid, containerID), "termination-log")
}

// Volumes is the default volumes root: the directories provisioned for
// PersistentVolumeClaims.
func (l Layout) Volumes() string { return filepath.Join(l.StateDir, "volumes") }

// EventJournal is where events survive a restart.
func (l Layout) EventJournal() string { return filepath.Join(l.StateDir, "events.jsonl") }

// ImagesState records the image archives imported from the images dir.
func (l Layout) ImagesState() string { return filepath.Join(l.StateDir, "images", "state.json") }

// CNICache is libcni's result cache.
func (l Layout) CNICache() string { return filepath.Join(l.StateDir, "cni", "cache") }

// CNIData is the built-in network's IPAM data.
func (l Layout) CNIData() string { return filepath.Join(l.StateDir, "cni", "networks") }

// NodeNameFile remembers the node name.
func (l Layout) NodeNameFile() string { return filepath.Join(l.StateDir, "node-name") }

// LockFile is the state dir's lock.
func (l Layout) LockFile() string { return filepath.Join(l.StateDir, "podvisor.lock") }

// ContainerdRoot is the embedded containerd's root (content, snapshots,
// metadata) and its log.
func (l Layout) ContainerdRoot() string { return filepath.Join(l.StateDir, "containerd") }

// ContainerdDir holds the embedded containerd's socket, pid file, config
// and state.
func (l Layout) ContainerdDir() string { return filepath.Join(l.RunDir, "containerd") }

// Sandboxes is the directory holding one directory per sandbox.
func (l Layout) Sandboxes() string { return filepath.Join(l.RunDir, "pods") }

// SandboxDir holds a sandbox's namespace files and /dev/shm.
func (l Layout) SandboxDir(id string) string { return filepath.Join(l.Sandboxes(), id) }

// Socket is the local API's unix socket.
func (l Layout) Socket() string { return filepath.Join(l.RunDir, "podvisor.sock") }

// PodLogs is the pod's log directory.
func (l Layout) PodLogs(namespace, name, uid string) string {
	return filepath.Join(l.LogDir, fmt.Sprintf("%s_%s_%s", namespace, name, uid))
}

// ContainerLog is one run's log file.
func (l Layout) ContainerLog(namespace, name, uid, container string, restartCount int32) string {
	return filepath.Join(l.PodLogs(namespace, name, uid), container, fmt.Sprintf("%d.log", restartCount))
}

// PodCgroup is pod uid's cgroup under parent, relative to a hierarchy's root.
func PodCgroup(parent, uid string) string { return filepath.Join("/", parent, "pod"+uid) }

// ContainerCgroup is container id's cgroup in pod uid's.
func ContainerCgroup(parent, uid, id string) string {
	return filepath.Join(PodCgroup(parent, uid), id)
}
