package certs

import "path/filepath"

// File names in the cert dir, kubelet's.
const (
	// SelfSignedCertName and SelfSignedKeyName are the self-signed
	// serving pair.
	SelfSignedCertName = "kubelet.crt"
	SelfSignedKeyName  = "kubelet.key"
	// ClientPrefix and ServerPrefix name the rotated pairs:
	// <prefix>-current.pem links to <prefix>-<yyyy-mm-dd-hh-mm-ss>.pem.
	ClientPrefix = "kubelet-client"
	ServerPrefix = "kubelet-server"
)

// Dir is a cert dir (--cert-dir).
type Dir string

// ClientCurrent is the client pair in use, the path a kubeconfig names as
// its client-certificate and client-key (kubeadm's kubelet.conf names
// /var/lib/kubelet/pki/kubelet-client-current.pem).
func (d Dir) ClientCurrent() string { return d.current(ClientPrefix) }

// ServerCurrent is the serving pair issued through a CSR.
func (d Dir) ServerCurrent() string { return d.current(ServerPrefix) }

// SelfSignedCert and SelfSignedKey are the self-signed serving pair.
func (d Dir) SelfSignedCert() string { return filepath.Join(string(d), SelfSignedCertName) }

// SelfSignedKey is the key of SelfSignedCert.
func (d Dir) SelfSignedKey() string { return filepath.Join(string(d), SelfSignedKeyName) }

func (d Dir) current(prefix string) string {
	return filepath.Join(string(d), prefix+"-current.pem")
}
