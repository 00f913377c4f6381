package daemon

import (
	"strings"
	"testing"

	"github.com/podvisor/podvisor/certs"
)

func TestValidateCerts(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string // "": accepted
	}{
		{"self-signed serving", func(c *Config) { c.TLSBindAddress = "127.0.0.1:10250"; c.ClientCAFile = "/ca" }, ""},
		{"key without certificate", func(c *Config) {
			c.TLSBindAddress = "127.0.0.1:10250"
			c.ClientCAFile = "/ca"
			c.TLSPrivateKeyFile = "/k"
		}, "needs --tls-cert-file"},
		{"serving CSR", func(c *Config) {
			c.TLSBindAddress, c.ClientCAFile, c.Kubeconfig, c.RotateServerCertificates = "127.0.0.1:10250", "/ca", "/kc", true
		}, ""},
		{"serving CSR without address", func(c *Config) { c.Kubeconfig, c.RotateServerCertificates = "/kc", true }, "--rotate-server-certificates needs --tls-bind-address"},
		{"serving CSR and a certificate file", func(c *Config) {
			c.TLSBindAddress, c.ClientCAFile, c.Kubeconfig, c.RotateServerCertificates = "127.0.0.1:10250", "/ca", "/kc", true
			c.TLSCertFile, c.TLSPrivateKeyFile = "/c", "/k"
		}, "exclude each other"},
		{"serving CSR without kubeconfig", func(c *Config) {
			c.TLSBindAddress, c.ClientCAFile, c.RotateServerCertificates = "127.0.0.1:10250", "/ca", true
		}, "--rotate-server-certificates needs --kubeconfig"},
		{"bootstrap", func(c *Config) { c.Kubeconfig, c.BootstrapKubeconfig = "/kc", "/boot" }, ""},
		{"bootstrap without kubeconfig", func(c *Config) { c.BootstrapKubeconfig = "/boot" }, "--bootstrap-kubeconfig needs --kubeconfig"},
		{"bootstrap without rotation", func(c *Config) {
			c.Kubeconfig, c.BootstrapKubeconfig, c.RotateCertificates = "/kc", "/boot", false
		}, "--rotate-certificates"},
		{"no cert dir", func(c *Config) { c.Kubeconfig, c.CertDir = "/kc", "" }, "--cert-dir: empty"},
	} {
		c := Default()
		tc.set(&c)
		err := c.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Without --tls-cert-file the remote API serves the cert dir's
// self-signed pair.
func TestRemoteAPISelfSignedFiles(t *testing.T) {
	c := Default()
	c.TLSBindAddress, c.ClientCAFile, c.CertDir = "127.0.0.1:10250", "/ca", "/pki"
	r := c.remoteAPI()
	if r.CertFile != certs.Dir("/pki").SelfSignedCert() || r.KeyFile != "/pki/kubelet.key" {
		t.Errorf("remote API serves %s, %s; want /pki/kubelet.crt, /pki/kubelet.key", r.CertFile, r.KeyFile)
	}
	c.TLSCertFile, c.TLSPrivateKeyFile = "/c", "/k"
	if r := c.remoteAPI(); r.CertFile != "/c" || r.KeyFile != "/k" {
		t.Errorf("remote API serves %s, %s; want the given files", r.CertFile, r.KeyFile)
	}
	if Default().CertDir != "/var/lib/kubelet/pki" || !Default().RotateCertificates || Default().RotateServerCertificates {
		t.Error("defaults: want --cert-dir /var/lib/kubelet/pki, --rotate-certificates on, --rotate-server-certificates off")
	}
}
