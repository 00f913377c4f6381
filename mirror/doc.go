// Package mirror makes podvisor's node and pods visible in an apiserver,
// when one is configured and reachable, as kubelet makes a node and its
// static pods visible: the Node and its Lease, a mirror pod per local pod
// with its status, and the events. It reads podvisor's status Store and
// writes only to the apiserver; the cluster's controllers and kubectl then
// see the node as a kubelet's.
//
// Contract:
//
//   - Optional and never in the way: Run starts without an apiserver and
//     retries with a jittered back-off capped near 7 s (kubelet's); nothing a pod
//     worker does waits for it (Record only queues; the Store's watch never
//     waits for a reader). Every request but the pod watch is bounded by
//     Options.Timeout.
//   - The client comes from a kubeconfig (token or client certificate, as
//     kubeadm's kubelet.conf), read again when it changes; certificate
//     files it names are re-read by client-go's transport when they
//     change. With Options.ClientCertificate (a rotated certificate), that
//     one is presented instead, and a new one closes every connection
//     within 10 s so the next present it, as kubelet's certificate
//     transport does.
//   - Node as kubelet registers it (pkg/kubelet/kubelet_node_status.go,
//     nodestatus/setters.go): created first, with kubelet's labels only
//     (NodeRestriction forbids node-role labels), addresses, capacity,
//     nodeInfo and the conditions MemoryPressure, DiskPressure, PIDPressure
//     and last Ready, with kubelet's reasons; its status is patched when it
//     changes and every 5 minutes; a deleted Node is registered again.
//   - Lease kube-node-lease/<node>, held by the node, 40 s, renewed every
//     10 s, owned by the Node, written only once the Node exists.
//   - A mirror pod per local pod that is not being deleted, as kubelet's
//     mirror client makes it (pkg/kubelet/pod/mirror_client.go): same
//     name, config.mirror set to the static pod's hash (its UID), a
//     controller owner reference to the Node as it is now; never created
//     while the Node is missing. Its status is the local pod's, patched
//     through the status subresource with the mirror's UID as precondition,
//     right after creation, whenever it changes (coalesced) and whenever
//     someone else changes the mirror's (the node lifecycle controller
//     marking it not ready). A mirror
//     deleted, being deleted, of an older manifest or of an older Node is
//     replaced (deleted with its UID as precondition, then created); a
//     mirror on this node without a local pod is deleted. Only pods with
//     the config.mirror annotation bound to this node are ever touched.
//     While a local pod is being removed (status.Removing) and no newer
//     pod of its name exists, its mirror is deleted with the pod's grace
//     period (the apiserver marks it Terminating) and keeps getting its
//     status; it is deleted for good once the pod is gone. A pod the node
//     stopped (status.StoppedByNode: evicted, shut down) keeps its mirror,
//     Failed; when it starts again the mirror is replaced. A
//     mirror the apiserver refuses (admission, validation) is tried again
//     after 5 s, doubling to 5 minutes: a bootstrapping apiserver refuses
//     mirrors until its system-node-critical PriorityClass exists.
//   - A pod that reads local ConfigMaps and Secrets (documents in the
//     manifests directory, which the apiserver never sees) is mirrored in a
//     form NodeRestriction takes, since it refuses a mirror that names a
//     ConfigMap, Secret, service account or PVC: configMap and secret
//     volumes, and projected volumes with a source other than downwardAPI,
//     are emptyDir volumes of the same name, their mounts unchanged; an env
//     var from configMapKeyRef or secretKeyRef keeps its name with no value;
//     envFrom and imagePullSecrets are left out, and so is a service
//     account's name with automountServiceAccountToken (a static pod gets
//     no token, as under kubelet). downwardAPI volumes and
//     fieldRef and resourceFieldRef env stay. Each reference rewritten is
//     listed, names and keys only, in the annotation
//     podvisor.io/local-references: a JSON array of {field, kind, name,
//     key} with the field path in the local pod. The mirror takes the
//     local pod's spec and nothing else, so no value of a local object
//     reaches the apiserver; the status and events podvisor sends name
//     objects and keys, never values (a container's own output, as its
//     termination message or a probe's or hook's output, is sent as
//     kubelet sends it). The rewritten spec is never compared with the
//     local one: the config.mirror hash alone ties them.
//   - Events about a pod name the static pod (its UID, not the mirror's),
//     as kubelet's do; they wait, at most 1000, while the apiserver is
//     away, and an event that recurs is counted on one Event.
//   - After any failure both sides are listed again: no duplicate mirror,
//     no status left behind.
//   - Periods, back-offs, resyncs and event times follow Options.Clock (a
//     k8s.io/utils/clock.WithTicker, the real one when nil), the same clock
//     the daemon gives supervise and probes; request timeouts bound I/O on
//     the wall clock.
//
// The package imports nothing from podvisor but status and internal leaves.
package mirror
