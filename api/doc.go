// Package api is podvisor's local HTTP API: the server the daemon runs on a
// unix socket, reading a status.Store, and the Client the CLI, the tests and
// the benchmark use.
//
// Contract:
//
//   - Serve is configured by Options, each field with a default but the
//     Store; it serves until its context ends, then shuts down within
//     ShutdownTimeout and removes its socket.
//   - The socket is reachable only as mode 0600, from its first moment; a
//     live server on the same path is never displaced (ErrSocketInUse), a
//     dead one's socket is replaced, a file that is not a socket is left
//     alone.
//   - The API only reads, but for POST /pods/{name}/restart (with a
//     Restarter) and exec/attach (below), and speaks the Kubernetes wire shapes (v1.PodList,
//     v1.Pod, v1.EventList, metav1.Status errors, metav1.WatchEvent
//     streams for ?watch=true); a pod is found by name with
//     status.FindPods, the lookup the CLI shares.
//   - Watches resume from a list's or an event's resourceVersion; versions
//     are per podvisor process (InstanceHeader), so a client that sees
//     another instance, or a 410 Expired, lists again (Client.WatchPods,
//     Client.WatchEvents do).
//   - Over TCP only when asked (Options.Remote, ListenTLS): the same handler
//     over HTTPS, TLS 1.2 or later, every request through TLSConfig.Filter
//     (which authenticates and authorizes: package auth; ListenTLS refuses
//     to serve without one). The handshake requires a certificate that
//     verifies against the client CA, or with ClientTokens asks for one
//     (still verified when given) so that a client may present a bearer
//     token to the Filter instead. The certificate, key and CA files are
//     re-read at the first handshake after one of them changes.
//     NewTLSClient is its client; its exec, attach and restart go to the
//     TLS server as its other calls do. The unix socket has no Filter.
//   - Besides reading, it serves exec and attach sessions through
//     Options.Streamer on kubelet's paths only (/exec/{namespace}/{pod}/
//     {container}, /attach/...), in Kubernetes' streaming protocol (SPDY
//     or WebSocket, v4.channel.k8s.io, through k8s.io/cri-streaming), on
//     the socket and the TLS port alike. A client that goes away cancels
//     its session; Serve ends the sessions when its context ends ("podvisor
//     is stopping") and waits (within ShutdownTimeout) for their clean-up.
//     Client.Exec and Client.Attach speak it with client-go's
//     remotecommand (SPDY) to a pod named exactly and a container the
//     caller picked, and return nil for exit code 0, else an *ExitError
//     with the remote exit code (an attach sends exitCode=1 to get the
//     process's, a podvisor extension).
//   - GET /version tells the daemon's version, Go's and the containerd
//     version (Options.ContainerdVersion, asked within 3s); GET /images
//     lists the runtime's images (Options.Images, within 10s) with the
//     pods whose containers use them, from the Store. The log endpoint
//     takes limitBytes as kubelet does (output cut after that many bytes,
//     a followed log ending there).
//   - GET /objects lists the local ConfigMaps and Secrets the daemon uses
//     (Options.Objects: the last good version of each, its file and line,
//     its file's errors, the pods using it, and the pods' references to
//     objects that do not exist). No Secret value ever leaves through it:
//     the handler replaces every Secret by a copy with data's keys only
//     (and their sizes), whatever the ObjectSource gives.
//   - Kubelet's API (kubelet.go), on the same handler so on both the
//     socket and the TLS port: /containerLogs, /exec, /attach and
//     /portForward in kubelet's paths and Kubernetes' own streaming
//     protocols (SPDY and WebSocket, k8s.io/cri-streaming), on the same
//     Streamer as the local sessions and Options.PodDialer for
//     port-forward; /metrics/resource and /stats/summary from
//     Options.Stats; GET /pods, /healthz and /metrics are already
//     kubelet's answers. A session ends when its client's connection
//     does, or after 4 hours idle.
//   - Each listener has its own limits: exec, attach and port-forward
//     sessions and followed logs (64 each on the socket and on the TLS
//     port) and watches (socket 64, 32 per peer uid; TLS port 32, 8 per
//     client); over one, 429 with a Status naming it. Nothing on the TLS
//     port takes from the socket's. Port-forward enters the network
//     namespace the pod's sandbox pinned, never a process's.
//   - POST /pods/{name}/rollout/undo changes what the node runs: it is
//     served on the socket only, to root or podvisor's own user, and each
//     one is logged with the caller's uid and pid; the TLS port answers
//     403.
//   - The Client checks each unix socket connection before sending on it:
//     the serving process (SO_PEERCRED) must be root or the client's own
//     user, else ErrUntrustedSocket, naming the socket and that uid.
//   - Client errors are checked with errors.Is: ErrUnreachable (nothing
//     answers, with a message saying to start podvisor), ErrNotFound,
//     ErrAmbiguous, ErrUnhealthy, ErrUntrustedSocket.
//
// The package reads status (its types, FindPods and the Store it serves);
// status does not import it.
package api
