// Package manifest reads a directory of Kubernetes manifests and turns it
// into the desired set of static pods for this node.
//
// Contract:
//
//   - Which files: *.yaml, *.yml, *.json and *.manifest directly in the
//     directory, symlinks followed. Never dotfiles, *~, *.swp, *.swx, *.bak,
//     *.orig, *.tmp, *.dpkg-*, *.rpm*, digit-only names (vim's 4913 probe) or
//     sub-directories; each ignored entry is logged once with the reason
//     (at Info for a wrong extension, a directory, a FIFO, socket or
//     device, at Debug for editor and package-manager litter and for
//     plain documentation: README, *.md, *.txt, source files). A *.json
//     file that is valid JSON but no Kubernetes object (foreignJSON) holds
//     no pod and is skipped at Debug too; one that does not parse is an
//     error. A file whose errors are gone, still present, is logged as
//     "manifest fixed" at Info.
//     Files over MaxFileSize and empty files are invalid.
//   - Decoding, defaulting and validation of one file are package
//     manifest/podfile's (its doc states that contract: strict,
//     case-sensitive decoding as the apiserver's, bounded, every problem at
//     its line); ParseFile, FileError, Pod, ErrInvalid and the field table
//     are its names, kept here. A scan that parsed a lot returns the memory
//     to the OS. Every problem is a *FileError ("path:line: field: reason"); all
//     of them wrap ErrInvalid unless they are I/O errors or ErrInsecure (a
//     manifest, its directory or a parent, or the directory of a symlinked
//     manifest's target, that a user other than root can change: not read,
//     last good pods kept; a warning instead with AllowInsecure). What is
//     read is what was checked: the file is opened by trust.Open, every
//     directory and symlink on the way checked on its descriptor. Warnings wrap
//     ErrInsecure, ErrIgnored or ErrMissingObject (a pod referencing a
//     ConfigMap or Secret not defined, or a key such an object lacks, is
//     accepted and waits for it; a missing imagePullSecrets Secret is
//     warned about too).
//   - Documents are independent. A valid document takes effect; an invalid
//     one keeps the last good content of the same document index (its pods
//     marked with Pod.Err) until it is fixed or the document or file is
//     removed; an invalid document's ConfigMaps and Secrets likewise keep
//     their last good version, marked in Snapshot.ObjectErrors
//     (Snapshot.Objects says where each object in use comes from). A
//     problem of the whole file (empty, too large, unreadable)
//     keeps every document's last good content. With SourceOptions.StateDir that
//     last good content is persisted (StateFile), so a restart or a reboot
//     with the file still broken keeps its pods running.
//   - No Secret value is written to disk: StateFile names each last good
//     Secret (namespace, name, type, keys, a keyed digest) and its content
//     is kept in SecretsFile under SourceOptions.RunDir, a tmpfs. A restart
//     keeps a broken file's last good Secret; a reboot forgets it (its
//     pods wait for it, as for a missing one, until the file is valid). An
//     older state file holding Secret values is rewritten without them at
//     start. No error, warning or log line holds a Secret's value
//     (podfile's contract).
//   - A file holding a Secret (a kind: Secret document, valid or not) that
//     its group or others can read is a warning (ErrSecretReadable) naming
//     the chmod that fixes it; the file is used all the same.
//   - A namespace/name defined twice (pods, ConfigMaps and Secrets each):
//     the one in use keeps being used (it was in the previous snapshot, or
//     recorded in the state file at start); only when neither is in use does
//     the file whose path sorts first win. The other gets an ErrDuplicate
//     error naming both files. Removing the winner promotes the other.
//   - Pods whose podvisor.io/wait-for annotations form a cycle are each
//     refused with an ErrWaitCycle error naming every file of the cycle;
//     one that the previous snapshot had keeps that version (marked), else
//     it is not in the snapshot. A name no pod has is an ErrMissingPod
//     warning: the pod waits for it.
//   - A pod may only reference ConfigMaps and Secrets defined in the
//     directory (the field table rejects such references today).
//   - Permissions: the directory, its parents up to /, the manifests and
//     the targets of symlinked manifests must be owned by root and not be
//     group- or world-writable; otherwise Snapshot.Warnings says so, and the
//     Source logs it once per change.
//   - Load and Validate read once; Source watches and sends a full Snapshot
//     after every change. All share one code path.
//   - Pods and objects handed out are never mutated afterwards.
//
// When a Source reads a file (the atomic-read rule):
//
//   - It watches the directory and its parent with inotify. A file is read
//     after its writer closed it (IN_CLOSE_WRITE), after it was renamed
//     into place (IN_MOVED_TO, the atomic way to install a manifest), when
//     it was created as a symlink or a hard link, when a dot-entry changed
//     and it is a symlink (Kubernetes' ..data swap), at the first scan,
//     after an inotify overflow, and when the directory appears or is
//     replaced. IN_CREATE or IN_MODIFY alone never reads a file: a file
//     still being written never becomes a pod, never an empty pod, and
//     never removes one; it keeps its previous state.
//   - Events schedule a rescan after Debounce; events in between join it.
//     So a delete followed by the same content within Debounce changes
//     nothing: the UID is the same. A close-after-write or rename-in
//     schedules it after QuickDebounce (a few milliseconds) instead: the
//     file is complete, and a pod should not wait for the debounce. (A
//     pending delete scanned early with the re-created file in place still
//     finds the same UID.)
//   - A relist (every RelistPeriod) repairs what events missed, but only
//     picks up content that is stable: a file written (IN_MODIFY) since its
//     last close is being written and keeps its previous state; a file
//     whose identity (device, inode, size, mtime, ctime) changed, or which
//     appeared, with no close or rename seen for it, is read only once a
//     relist has seen the same identity as the relist before it. An
//     attribute change (touch, chmod) is not a change of content.
//   - After an overflow, or when the directory is new, events may have been
//     lost, so every file not known to be being written is read.
//   - The directory may be missing (no pods; the parent's events or the
//     relist notice it appear), removed (its pods go), recreated, or be a
//     symlink swapped atomically (the watch moves to the new target).
//     Renames in and out are adds and deletes.
//
// The package imports nothing else from podvisor except manifest/podfile and
// internal leaves (inotify, atomicfile, layout, version).
package manifest
