// Package auth decides who may do what on podvisor's TLS port, as kubelet
// does on its own port (pkg/kubelet/server/auth.go): every request is
// authenticated (a client certificate from the client CA, or a bearer
// token the apiserver vouches for through a TokenReview), turned into
// kubelet's authorization attributes (resource nodes, the node's name, a
// subresource from the path, a verb from the method), and authorized
// (a SubjectAccessReview, a local policy file, or always).
//
// Contract:
//
//   - Filter.Wrap is the only way in: anonymous requests get 401, denied
//     ones 403 "Forbidden (user=..., verb=..., resource=nodes,
//     subresource=...)", a webhook that fails or does not answer within
//     WebhookTimeout 503 "Authorization error (...)" or 401: an error never
//     allows.
//   - The paths of exec, attach, port-forward, run and restart (kubelet's
//     and podvisor's own) are authorized as verb create whatever the HTTP
//     method (kubelet would let a GET upgrade to a websocket exec with
//     nodes/proxy get), and each such request is logged at INFO with the
//     user, groups, how they were authenticated, the pod, the container
//     and the decision.
//   - /debug/pprof is not served (404) unless Options.Profiling.
//   - Webhook answers are cached (TokenReview: both answers for the token
//     TTL; SubjectAccessReview: allowed and denied for their own TTLs, as
//     kubelet's flags); errors are never cached. Each cache is a bounded
//     LRU with separate room for negative answers, so bad tokens evict
//     only bad tokens' answers. A token not in the cache is reviewed
//     within its client address's limit (an IPv6 address by its /64);
//     past it the answer is 429 with Retry-After and no review is made.
//   - LoadPolicy refuses a file with an unknown field, a subject with
//     neither user nor group, or a group-only subject naming a crowd built
//     into Kubernetes (system:authenticated, system:serviceaccounts,
//     system:nodes, system:bootstrappers…), naming the file, the field and
//     the reason. LoadTrustedPolicy also refuses a file others can change.
//   - CheckClientCA refuses a client CA related to the kubeconfig's
//     cluster CA unless the apiserver authorizes (Webhook): a shared public
//     key, or a chain either way through the certificates of both files.
//     A certificate every node and every bootstrap token can get would
//     otherwise pass.
//   - KubeconfigClient refuses a kubeconfig others can change: its writer
//     would choose the apiserver that answers the reviews.
package auth
