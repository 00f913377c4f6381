// Package certs owns the node's certificates in the cert dir, laid out as
// kubelet lays out /var/lib/kubelet/pki: the self-signed serving pair
// kubelet.crt and kubelet.key, and the rotated pairs
// kubelet-client-current.pem and kubelet-server-current.pem, each a
// symbolic link to a dated file (kubelet-client-2026-12-02-11-40-05.pem)
// holding the certificate and its key.
//
// Contract:
//
//   - SelfSigned returns the serving pair in the dir, made as kubelet makes
//     it (a CA of its own signing a certificate for the node's name, with
//     the node's addresses) when it is missing, unreadable, expired or does
//     not name the node's name and addresses; otherwise the same pair again,
//     so a restart serves the same certificate.
//   - Client rotates the client certificate of the kubeconfig as kubelet's
//     certificate manager (k8s.io/client-go/util/certificate) does, with
//     a manager and store of this package's own, on the same files: a new
//     ECDSA P-256 key and a CertificateSigningRequest for
//     system:node:<node> in system:nodes with signer
//     kubernetes.io/kube-apiserver-client-kubelet at 70 to 90 % of the
//     certificate's lifetime, stored as kubelet-client-current.pem; a
//     failed rotation is retried after 2 s, doubling to 32 s. The first certificate is the store's, else
//     the kubeconfig's (the "initial" certificate, which kubelet replaces at
//     once), else one requested with the bootstrap kubeconfig; with a
//     bootstrap kubeconfig and a kubeconfig missing or expired, the
//     kubeconfig is written pointing at kubelet-client-current.pem, as
//     kubelet's bootstrap does. A kubeconfig that authenticates without a
//     client certificate (a token) leaves nothing to rotate.
//   - Server requests the serving certificate through a
//     CertificateSigningRequest with signer kubernetes.io/kubelet-serving
//     (kubelet's serverTLSBootstrap) and rotates it the same way, stored as
//     kubelet-server-current.pem; someone must approve it.
//   - Nothing waits for the apiserver: both retry in the background, and
//     every request is bounded by Options.Timeout.
//
// The apiserver is spoken to through internal/kube: client-go's
// clientset, which its certificate manager needs, is not linked (issue
// 19). The package imports nothing from podvisor but internal leaves.
package certs
