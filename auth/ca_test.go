package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/test/testcerts"
)

func TestCheckClientCA(t *testing.T) {
	dir := t.TempDir()
	cluster, err := testcerts.NewCA(dir, "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	own, err := testcerts.NewCA(dir, "podvisor-clients")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubelet.conf")
	if err := testcerts.Kubeconfig(kubeconfig, "kubernetes-ca.crt", "{token: abc}"); err != nil {
		t.Fatal(err)
	}
	// A bundle holding the cluster CA after another.
	bundle := filepath.Join(dir, "bundle.crt")
	a, _ := os.ReadFile(own.CertFile)
	b, _ := os.ReadFile(cluster.CertFile)
	os.WriteFile(bundle, append(a, b...), 0o644)

	for _, tc := range []struct {
		clientCA, kubeconfig, mode string
		refused                    bool
	}{
		{cluster.CertFile, kubeconfig, "Policy", true},
		{bundle, kubeconfig, "AlwaysAllow", true},
		{own.CertFile, kubeconfig, "Policy", false},
		{cluster.CertFile, "", "Policy", false},
		{cluster.CertFile, filepath.Join(dir, "not-yet.conf"), "Policy", false},
	} {
		err := CheckClientCA(tc.clientCA, tc.kubeconfig, tc.mode)
		if tc.refused != errors.Is(err, ErrClusterCA) {
			t.Errorf("%s %s %s: err = %v, refused want %v", filepath.Base(tc.clientCA), filepath.Base(tc.kubeconfig), tc.mode, err, tc.refused)
		}
		if tc.refused && err != nil && (!strings.Contains(err.Error(), "--client-ca-file "+tc.clientCA) || !strings.Contains(err.Error(), "--authorization-mode "+tc.mode) || !strings.Contains(err.Error(), "bootstrap token")) {
			t.Errorf("message: %v", err)
		}
	}
}
