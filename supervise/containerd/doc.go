// Package containerd is supervise's Runtime on a containerd daemon: images
// (pull policy, unpack, archive import), containers built from a pod's
// spec (OCI spec options in kubelet's and the CRI plugin's terms), their
// tasks with CRI-format logs through podvisor's log driver, stop with a
// deadline, exec (probes and hooks, and interactive sessions with a
// terminal), attach, and the exit/OOM event stream.
//
// Contract:
//
//   - It is the only code that calls the containerd client for pods; the
//     v2 client speaks to containerd 1.6 and 2.x alike.
//   - Every container carries supervise's labels; its stop signal is fixed
//     in a label when it is created.
//   - Wait is called before Kill, so no exit is missed; cleanup after a
//     failed start runs on a context that outlives the caller's.
//   - Missing containers and tasks are not errors for Stop and Remove; a
//     task whose status containerd cannot read is an error, never an exit.
//   - Every exec returns by its context's end even when its process
//     exited and a child of it holds the output open: the output is cut
//     there and the exec process deleted in the background.
//   - An interactive exec (ExecStream) bounds each containerd call, keeps
//     its fifos in a private directory removed on return, and kills its
//     process when its context ends, awaiting the exit.
//   - A pod's containers run with its runtime class (Options.RuntimeClasses:
//     containerd's runtime type and options, the base spec), runc's shim
//     without one; a class it lacks fails Create (ErrNoRuntimeClass).
//   - A ContainerConfig with PodInit is a pod's init (podinit_linux.go):
//     no image or snapshot, Options.PodInit's binary read-only in the
//     directory Options.PodInitRoot, as 65535 with no capabilities, in the
//     pod's shim, runtime class, cgroup and network and IPC namespaces;
//     it is started with no log and no I/O.
//   - A container's output always goes to its log. tty: true gives its
//     task a terminal; stdin: true (with tty only: without a terminal the
//     shim gives a binary-logged process no stdin) a fifo in StdinDir,
//     removed with the container. Attach writes to that fifo and follows
//     the log; it never stops the container.
//   - A pull is cut only when no byte arrives for PullProgressDeadline
//     (ErrPullStalled), never for its length; it reports its start and
//     the bytes received through the ctx's supervise.PullReporter. Hosts
//     come from the hosts.toml layout in RegistryConfigDir (containerd's
//     own config.ConfigureHosts: a localhost registry needs none), the
//     credentials from the pod's imagePullSecrets (the ctx's
//     supervise.PullSecretsFrom) and then Options.Credentials
//     (NodeCredentials: a docker config.json), matched as kubelet's
//     keyring, asked per image and host. With several matching, each is
//     tried until a pull succeeds; never anonymous after them. The pull
//     is not bounded by RequestTimeout (only its lookup and unpack are).
//     The credentials file is read at each pull from a descriptor
//     checked with internal/trust, and each host's hosts.toml directory
//     checked when a pull looks it up: one others could change is used
//     with a warning (Options.Log), told once while it lasts.
//   - With imagePullPolicy Always, a local image replaces a failed pull
//     only when the registry could not be reached (network error, stall);
//     a registry's refusal (401, 403, 404) is the pull's error.
//   - PodSandbox tells a pod's sandbox and the network namespace file its
//     containers' spec joins, from its newest container.
//   - An image volume (MountImageVolume) is a read-only view snapshot of
//     the image, one per pod and image, labelled with its pod and image
//     and rooted against containerd's garbage collection (no lease:
//     Collect drops podvisor's leases); it is mounted through the
//     snapshotter's mounts, so 1.6 and 2.x alike, and removed by
//     RemoveImageVolumes once its mount is gone. An OCI artifact is
//     refused as a container's image (errArtifact); for an image volume
//     its layers are fetched as they are, written once as files named by
//     their titles into a committed snapshot of their own under a lease,
//     and viewed as an image's is; only the views hold it.
package containerd
