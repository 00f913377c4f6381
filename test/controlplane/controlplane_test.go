package controlplane

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestControlPlane starts etcd and kube-apiserver, asks them what the
// mirror will need (an apiserver that is ready; a node identity the Node
// authorizer lets register its Node), and checks that Stop leaves no
// process behind.
func TestControlPlane(t *testing.T) {
	cp := Start(t, Options{NodeName: "node1"})

	if out := cp.Kubectl(t, "get", "--raw", "/readyz"); out != "ok" {
		t.Errorf("kubectl get --raw /readyz = %q, want ok", out)
	}
	if out := cp.Kubectl(t, "auth", "can-i", "create", "nodes", "--as", "system:node:node1", "--as-group", "system:nodes"); strings.TrimSpace(out) != "yes" {
		t.Errorf("can system:node:node1 create nodes: %q, want yes", out)
	}
	// A user outside system:nodes is not a node: the answer must be no, or
	// the yes above proves nothing.
	if out, err := cp.RunKubectl(t.Context(), "auth", "can-i", "create", "nodes", "--as", "someone"); err == nil || strings.TrimSpace(out) != "no" {
		t.Errorf("can someone create nodes: %q, %v; want no and an error", out, err)
	}

	// kubelet.conf is kubeadm's: the server we run and an embedded client
	// certificate for the node, no bootstrap token.
	subject := kubeletSubject(t, cp)
	if subject.CommonName != "system:node:node1" || !slices.Equal(subject.Organization, []string{"system:nodes"}) {
		t.Errorf("kubelet.conf certificate subject = %v, want CN=system:node:node1 O=system:nodes", subject)
	}
	if out := cp.Kubectl(t, "--kubeconfig", cp.KubeletKubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); out != "system:node:node1" {
		t.Errorf("kubelet.conf authenticates as %q, want system:node:node1", out)
	}

	pids := cp.Pids()
	if len(pids) != 2 {
		t.Fatalf("Pids = %v, want etcd and kube-apiserver", pids)
	}
	if err := cp.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
	if left := processesNaming(t, cp.Dir); len(left) > 0 {
		t.Errorf("processes naming %s after Stop: %v", cp.Dir, left)
	}
}

// kubeletSubject decodes the client certificate embedded in kubelet.conf,
// checking that the file names cp.Server.
func kubeletSubject(t *testing.T, cp *ControlPlane) pkix.Name {
	t.Helper()
	data, err := os.ReadFile(cp.KubeletKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Clusters []struct {
			Cluster struct {
				Server string `json:"server"`
			} `json:"cluster"`
		} `json:"clusters"`
		Users []struct {
			User map[string]string `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(data, &conf); err != nil {
		t.Fatalf("kubelet.conf: %v", err)
	}
	if len(conf.Clusters) != 1 || conf.Clusters[0].Cluster.Server != cp.Server {
		t.Errorf("kubelet.conf clusters = %+v, want one with server %s", conf.Clusters, cp.Server)
	}
	if len(conf.Users) != 1 || conf.Users[0].User["client-certificate-data"] == "" || conf.Users[0].User["token"] != "" {
		t.Fatalf("kubelet.conf users = %v, want one with client-certificate-data and no token", conf.Users)
	}
	der, err := base64.StdEncoding.DecodeString(conf.Users[0].User["client-certificate-data"])
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(der)
	if block == nil {
		t.Fatal("kubelet.conf client-certificate-data holds no PEM block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.Subject
}

// processesNaming lists the processes whose command line mentions dir.
func processesNaming(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		if strings.Contains(string(cmdline), dir) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}
