package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podvisor/podvisor/test/controlplane"
)

// kubeadmUpgradePatches are kubeadm's own patches (--patches, target
// +strategic) that make the manifests `kubeadm upgrade` regenerates run on
// this host, as KubeadmRoot's loopback edits made the ones `kubeadm init`
// wrote: hostPaths below /etc/kubernetes get kubeadm's root as a prefix,
// the apiserver's probes ask 127.0.0.1 instead of the advertise address.
// With them the regenerated manifest of a component whose configuration
// did not change equals the one running, and kubeadm skips it. %[1]s is
// the root.
var kubeadmUpgradePatches = map[string]string{
	"kube-apiserver+strategic.yaml": `spec:
  containers:
  - name: kube-apiserver
    livenessProbe:
      httpGet:
        host: 127.0.0.1
    readinessProbe:
      httpGet:
        host: 127.0.0.1
    startupProbe:
      httpGet:
        host: 127.0.0.1
  volumes:
  - name: k8s-certs
    hostPath:
      path: %[1]s/etc/kubernetes/pki
`,
	"kube-controller-manager+strategic.yaml": `spec:
  volumes:
  - name: k8s-certs
    hostPath:
      path: %[1]s/etc/kubernetes/pki
  - name: kubeconfig
    hostPath:
      path: %[1]s/etc/kubernetes/controller-manager.conf
`,
	"kube-scheduler+strategic.yaml": `spec:
  volumes:
  - name: kubeconfig
    hostPath:
      path: %[1]s/etc/kubernetes/scheduler.conf
`,
}

// kubeadmUpgradeConfig is the UpgradeConfiguration of both runs. No
// kubelet runs here, so the preflight checks that ask kubelet's
// container runtime (its CRI socket, absent from kubeadm's root) fail
// and are ignored by name: SystemVerification, ContainerRuntimeVersion
// and ImagePull (podvisor has the images from its images dir). etcd is
// not upgraded (same version) and certificates are not renewed (they
// are fresh). %[1]s is how long kubeadm waits for each component,
// %[2]s the version.
const kubeadmUpgradeConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: UpgradeConfiguration
apply:
  kubernetesVersion: %[2]s
  etcdUpgrade: false
  certificateRenewal: false
  patches:
    directory: /patches
  ignorePreflightErrors:
  - SystemVerification
  - ContainerRuntimeVersion
  - ImagePull
timeouts:
  upgradeManifests: %[1]s
`

// testKubeadmUpgrade is TestKubeadmControlPlane's last step: `kubeadm
// upgrade apply` to the same version with a changed component flag
// replaces kube-scheduler's manifest the way it does under kubelet (the
// old one moved to a backup dir, the new one moved in), waits for the
// mirror pod's kubernetes.io/config.hash to change and the pod to be
// Running, and reports success; the other components' manifests equal
// their regenerated ones and keep running. Then a change kubeadm cannot
// bring up (kube-controller-manager with a hostPath directory that does
// not exist: its pod never leaves Pending) makes kubeadm restore its
// backup after the wait timeout, and podvisor runs the restored manifest
// again. The changed configuration reaches kubeadm as on a real cluster,
// through the kubeadm-config ConfigMap (`kubeadm init phase upload-config
// kubeadm`), and the node is cordoned first as kubeadm's upgrade guide
// drains it (with no schedulable node, the preflight CreateJob check,
// which needs a kubelet to run its Job, is skipped by kubeadm itself).
func testKubeadmUpgrade(t *testing.T, d *daemon, ka *kubeadmRun, kc *kubectlRun, admin string) {
	root := ka.k.Root
	manifests := filepath.Join(root, "etc", "kubernetes", "manifests")
	began := time.Now()
	writeRoot := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, p := range kubeadmUpgradePatches {
		writeRoot(filepath.Join("patches", name), fmt.Sprintf(p, root))
	}
	initCfg, err := os.ReadFile(filepath.Join(root, controlplane.Config))
	if err != nil {
		t.Fatal(err)
	}
	// clusterConfig is kubeadm.yaml with more fields in its
	// ClusterConfiguration.
	clusterConfig := func(fields string) string {
		t.Helper()
		const kind = "kind: ClusterConfiguration\n"
		if n := strings.Count(string(initCfg), kind); n != 1 {
			t.Fatalf("%s: %q occurs %d times, want 1", controlplane.Config, kind, n)
		}
		return strings.Replace(string(initCfg), kind, kind+fields, 1)
	}
	const schedulerFlag = "--kube-api-qps=60"
	scheduler := `scheduler:
  extraArgs:
  - name: kube-api-qps
    value: "60"
`
	writeRoot("kubeadm-upgrade.yaml", clusterConfig(scheduler))
	writeRoot("upgrade.yaml", fmt.Sprintf(kubeadmUpgradeConfig, "1m", controlplane.Version))
	// mirror is kube-system/<component>-<node> in the apiserver.
	mirror := func(component string) *v1.Pod {
		t.Helper()
		var p v1.Pod
		if err := json.Unmarshal([]byte(kc.must(admin, "get", "pod", "-n", "kube-system", component+"-"+node, "-o", "json")), &p); err != nil {
			t.Fatal(err)
		}
		return &p
	}
	const hashKey = "kubernetes.io/config.hash"
	components := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}
	hashes, ids := map[string]string{}, map[string]string{}
	for _, c := range components {
		hashes[c] = mirror(c).Annotations[hashKey]
		p, err := d.pod("kube-system/" + c + "-" + node)
		if err != nil {
			t.Fatal(err)
		}
		ids[c] = containerID(p, c)
	}

	// kubeadm init's kubelet-start phase, which TestKubeadmControlPlane
	// does not run, writes /var/lib/kubelet/config.yaml and
	// kubeadm-flags.env (it only warns that it cannot start kubelet):
	// upgrade's kubelet-config and post-upgrade phases rewrite them.
	ka.run("init", "phase", "kubelet-start", "--config", controlplane.Config)
	ka.run("init", "phase", "upload-config", "kubeadm", "--config", "/kubeadm-upgrade.yaml", "--kubeconfig", "/etc/kubernetes/super-admin.conf")
	kc.must(admin, "cordon", node)
	out := ka.run("upgrade", "apply", "--config", "/upgrade.yaml", "--yes")
	for _, want := range []string{
		`Current and new manifests of kube-apiserver are equal, skipping upgrade`,
		`Current and new manifests of kube-controller-manager are equal, skipping upgrade`,
		`Component "kube-scheduler" upgraded successfully!`,
		`[upgrade] SUCCESS!`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubeadm upgrade apply's output lacks %q", want)
		}
	}
	// kubeadm returned once the new mirror was Running; podvisor then
	// reports it Ready.
	var p *v1.Pod
	d.poll("kube-scheduler's new mirror Running 1/1", time.Minute, func() (bool, string) {
		p = mirror("kube-scheduler")
		return p.Status.Phase == v1.PodRunning && readyCount(p) == "1/1", fmt.Sprintf("%s %s %s", p.Annotations[hashKey], p.Status.Phase, readyCount(p))
	})
	if h := p.Annotations[hashKey]; h == "" || h == hashes["kube-scheduler"] {
		t.Errorf("kube-scheduler's mirror config.hash %q, want a new hash (was %s)", h, hashes["kube-scheduler"])
	}
	if cmd := p.Spec.Containers[0].Command; !slices.Contains(cmd, schedulerFlag) {
		t.Errorf("kube-scheduler's mirror runs %v, want %s", cmd, schedulerFlag)
	}
	if local, err := d.pod("kube-system/kube-scheduler-" + node); err != nil {
		t.Error(err)
	} else if containerID(local, "kube-scheduler") == ids["kube-scheduler"] {
		t.Errorf("kube-scheduler still runs container %s after its manifest changed", ids["kube-scheduler"])
	}
	if body, err := getBody("https://127.0.0.1:10259/livez"); err != nil || body != "ok" {
		t.Errorf("after the upgrade, GET https://127.0.0.1:10259/livez = %q, %v; want ok", body, err)
	}
	for _, c := range components[:3] {
		if h := mirror(c).Annotations[hashKey]; h != hashes[c] {
			t.Errorf("%s's mirror config.hash %s after the upgrade, want %s (unchanged)", c, h, hashes[c])
		}
		if local, err := d.pod("kube-system/" + c + "-" + node); err != nil {
			t.Error(err)
		} else if id := containerID(local, c); id != ids[c] {
			t.Errorf("%s runs container %s after the upgrade, want %s (not restarted)", c, id, ids[c])
		}
	}
	upgraded := time.Since(began)

	// Rollback: kubeadm waits upgradeManifests for the pod to be Running,
	// then moves the backup back.
	kcmManifest, err := os.ReadFile(filepath.Join(manifests, "kube-controller-manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(root, "missing-dir")
	writeRoot("kubeadm-rollback.yaml", clusterConfig(scheduler+`controllerManager:
  extraVolumes:
  - name: missing
    hostPath: `+missing+`
    mountPath: /missing
    pathType: Directory
`))
	writeRoot("rollback.yaml", fmt.Sprintf(kubeadmUpgradeConfig, "15s", controlplane.Version))
	ka.run("init", "phase", "upload-config", "kubeadm", "--config", "/kubeadm-rollback.yaml", "--kubeconfig", "/etc/kubernetes/super-admin.conf")
	rollbackBegan := time.Now()
	out, err = ka.k.Run(t.Context(), "upgrade", "apply", "--config", "/rollback.yaml", "--yes")
	if err == nil {
		t.Fatalf("kubeadm upgrade apply with a hostPath that does not exist succeeded:\n%s", out)
	}
	t.Logf("kubeadm upgrade apply, expected to fail (%v):\n%s", time.Since(rollbackBegan).Round(time.Millisecond), out)
	if want := "kubeadm has tried to recover everything into the earlier state"; !strings.Contains(out, want) {
		t.Errorf("kubeadm upgrade apply's output lacks %q", want)
	}
	if got, err := os.ReadFile(filepath.Join(manifests, "kube-controller-manager.yaml")); err != nil || string(got) != string(kcmManifest) {
		t.Errorf("after kubeadm's rollback kube-controller-manager.yaml is not the manifest it backed up (%v):\n%s", err, got)
	}
	d.poll("kube-controller-manager's restored mirror Running 1/1", time.Minute, func() (bool, string) {
		// The restored manifest is a new version of the pod: its mirror is
		// replaced, and between the two there is none (NotFound).
		out, err := kc.run(admin, "get", "pod", "-n", "kube-system", "kube-controller-manager-"+node, "-o", "json")
		if err != nil {
			return false, err.Error()
		}
		p = &v1.Pod{}
		if err := json.Unmarshal([]byte(out), p); err != nil {
			return false, err.Error()
		}
		return p.Annotations[hashKey] == hashes["kube-controller-manager"] && p.Status.Phase == v1.PodRunning && readyCount(p) == "1/1",
			fmt.Sprintf("%s %s %s", p.Annotations[hashKey], p.Status.Phase, readyCount(p))
	})
	if body, err := getBody("https://127.0.0.1:10257/healthz"); err != nil || body != "ok" {
		t.Errorf("after kubeadm's rollback, GET https://127.0.0.1:10257/healthz = %q, %v; want ok", body, err)
	}

	// The cluster's configuration says again what runs.
	ka.run("init", "phase", "upload-config", "kubeadm", "--config", "/kubeadm-upgrade.yaml", "--kubeconfig", "/etc/kubernetes/super-admin.conf")
	kc.must(admin, "uncordon", node)
	t.Logf("kubeadm upgrade apply: kube-scheduler upgraded in %v; rollback of kube-controller-manager in %v",
		upgraded.Round(time.Millisecond), time.Since(rollbackBegan).Round(time.Millisecond))
}
