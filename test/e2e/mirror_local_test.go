package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podvisor/podvisor/mirror"
	"github.com/podvisor/podvisor/test/controlplane"
)

// The values of the local objects TestMirrorLocalObjects' pods read: each
// must be in the container and nowhere in the apiserver.
const (
	localPassword = "pv-s3cr3t-9f2d7a41"
	localUser     = "pv-us3r-3c8e41b0"
	localConfig   = "pv-c0nf1g-5e1b77c2"
	localRegToken = "pv-r3g-t0k3n-0d9a"
	localRegAuth  = "cHZ1c2VyOnB2LXIzZy10MGszbi0wZDlh" // base64 "pvuser:pv-r3g-t0k3n-0d9a"
)

// mirrorLocalObjects are local ConfigMaps and Secrets as documents in the
// manifests directory.
var mirrorLocalObjects = `apiVersion: v1
kind: ConfigMap
metadata: {name: appconf}
data:
  LEVEL: ` + localConfig + `
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData:
  password: ` + localPassword + `
  USER: ` + localUser + `
---
apiVersion: v1
kind: Secret
metadata: {name: regcred}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths":{"registry.invalid":{"auth":"` + localRegAuth + `"}}}'
`

// localVolume is a volume of a local object in mirrorLocalPod, with a file
// the container must read from it.
type localVolume struct {
	name, source, mountPath, file, want string
	ref                                 mirror.LocalReference // what the mirror's annotation lists
}

// mirrorLocalVolumes are mirrorLocalPod's volumes of local objects: the
// container reads a file of each, and the mirror shows each as emptyDir,
// listed in its annotation.
var mirrorLocalVolumes = []localVolume{
	{name: "credsvol", source: "secret: {secretName: creds}", mountPath: "/etc/creds", file: "password", want: localPassword, ref: mirror.LocalReference{Field: "spec.volumes[0].secret", Kind: "Secret", Name: "creds"}},
	{name: "confvol", source: "configMap: {name: appconf}", mountPath: "/etc/appconf", file: "LEVEL", want: localConfig, ref: mirror.LocalReference{Field: "spec.volumes[1].configMap", Kind: "ConfigMap", Name: "appconf"}},
}

// mirrorLocalPod reads the local objects in every way: the volumes of
// mirrorLocalVolumes, secretKeyRef, envFrom secretRef, imagePullSecrets and
// configMapKeyRef, beside a fieldRef the mirror keeps; and it names a
// service account and asks for its token, which NodeRestriction refuses in
// a mirror pod.
func mirrorLocalPod() string {
	var mounts, vols strings.Builder
	for _, v := range mirrorLocalVolumes {
		fmt.Fprintf(&mounts, "    - {name: %s, mountPath: %s}\n", v.name, v.mountPath)
		fmt.Fprintf(&vols, "  - name: %s\n    %s\n", v.name, v.source)
	}
	pod := `apiVersion: v1
kind: Pod
metadata:
  name: secretuser
spec:
  terminationGracePeriodSeconds: 1
  imagePullSecrets: [{name: regcred}]
  serviceAccountName: app-sa
  automountServiceAccountToken: true
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    envFrom:
    - {prefix: DB_, secretRef: {name: creds}}
    env:
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: creds, key: password}}}
    - {name: LEVEL, valueFrom: {configMapKeyRef: {name: appconf, key: LEVEL}}}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
`
	if mounts.Len() > 0 {
		pod += "    volumeMounts:\n" + mounts.String() + "  volumes:\n" + vols.String()
	}
	return pod
}

// mirrorLocalWaiter waits for a key its Secret lacks: its status and
// events name the Secret and the key.
const mirrorLocalWaiter = `apiVersion: v1
kind: Pod
metadata:
  name: keywaiter
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    env:
    - {name: MISSING, valueFrom: {secretKeyRef: {name: creds, key: nope}}}
`

// TestMirrorLocalObjects runs, against a real etcd and kube-apiserver with
// NodeRestriction, a pod that reads local Secrets and a ConfigMap
// (secretKeyRef, envFrom secretRef, imagePullSecrets, configMapKeyRef): it
// is mirrored, Running and Ready, the mirror listing what it reads; the
// values are in the container, and not one of them is anywhere in the
// apiserver: not in what it serves (pods, events, nodes, configmaps,
// secrets, every namespace), not in etcd's keyspace, not in etcd's files
// (write-ahead log and database, so not even in a revision since
// overwritten), nor in podvisor's log.
func TestMirrorLocalObjects(t *testing.T) {
	requireEnv(t)
	// Its own control plane on free ports: it runs beside the other
	// control-plane tests of this kind once TestKubeadmControlPlane (fixed
	// ports) is done.
	t.Parallel()
	dir, err := os.MkdirTemp("", "pv-e2e-cp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control plane logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	cp := controlplane.Start(t, controlplane.Options{NodeName: node, Dir: dir})
	d := newDaemon(t, "--kubeconfig", cp.KubeletKubeconfig)
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &mirrorCluster{d: d, cp: cp, cs: cs}

	d.start()
	n := c.waitNode(t, "Ready", 60*time.Second, func(n *v1.Node) bool { return nodeCondition(n, v1.NodeReady).Status == v1.ConditionTrue })
	// The apiserver refuses a mirror pod that names a Secret (the
	// ServiceAccount admission plugin and NodeRestriction both do), as it
	// would refuse podvisor's mirror were it the local pod as it is.
	refused := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"probe","namespace":"default","annotations":{"kubernetes.io/config.mirror":"x"},` +
		`"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"` + node + `","uid":"` + string(n.UID) + `","controller":true}]},` +
		`"spec":{"nodeName":"` + node + `","containers":[{"name":"c","image":"busybox","env":[{"name":"P","valueFrom":{"secretKeyRef":{"name":"creds","key":"password"}}}]}]}}`
	probe := filepath.Join(dir, "probe.json")
	if err := os.WriteFile(probe, []byte(refused), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := cp.RunKubectl(t.Context(), "--kubeconfig", cp.KubeletKubeconfig, "create", "-f", probe); err == nil || !strings.Contains(err.Error(), "reference secrets") {
		t.Fatalf("kubelet.conf created a mirror pod that names a Secret (%q, %v)", out, err)
	}
	// And one that names a service account.
	refusedSA := strings.Replace(refused, `"containers":`, `"serviceAccountName":"app-sa","containers":`, 1)
	refusedSA = strings.Replace(refusedSA, `"name":"probe"`, `"name":"probe-sa"`, 1)
	refusedSA = strings.Replace(refusedSA, `,"env":[{"name":"P","valueFrom":{"secretKeyRef":{"name":"creds","key":"password"}}}]`, "", 1)
	if err := os.WriteFile(probe, []byte(refusedSA), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := cp.RunKubectl(t.Context(), "--kubeconfig", cp.KubeletKubeconfig, "create", "-f", probe); err == nil || !strings.Contains(err.Error(), "service account") {
		t.Fatalf("kubelet.conf created a mirror pod that names a service account (%q, %v)", out, err)
	}
	if out, err := cp.RunKubectl(t.Context(), "--kubeconfig", cp.KubeletKubeconfig, "label", "node", node, "node-role.kubernetes.io/control-plane="); err == nil || !strings.Contains(err.Error(), "is not allowed to modify labels") {
		t.Errorf("kubelet.conf labelled its node (%q, %v): NodeRestriction is not in force", out, err)
	}

	d.writeManifest("objects.yaml", mirrorLocalObjects)
	d.writeManifest("secretuser.yaml", mirrorLocalPod())
	d.writeManifest("keywaiter.yaml", mirrorLocalWaiter)
	local := d.waitPod("secretuser-"+node, 60*time.Second, "Running and Ready", func(p *v1.Pod) bool { return running(p) && podReady(p) })

	// The values are in the container: what the apiserver lacks below is
	// there to be leaked.
	out, errOut, code := d.runCLI("", "exec", "secretuser-"+node, "--", "env")
	if code != 0 {
		t.Fatalf("exec env: exit %d: %s", code, errOut)
	}
	env := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	for k, want := range map[string]string{"PASSWORD": localPassword, "DB_password": localPassword, "DB_USER": localUser, "LEVEL": localConfig, "POD_NAME": "secretuser-" + node} {
		if env[k] != want {
			t.Errorf("in the container %s = %q, want %q", k, env[k], want)
		}
	}
	for _, v := range mirrorLocalVolumes {
		got, errOut, code := d.runCLI("", "exec", "secretuser-"+node, "--", "cat", v.mountPath+"/"+v.file)
		if code != 0 || got != v.want {
			t.Errorf("in the container %s/%s = %q (exit %d: %s), want %q", v.mountPath, v.file, got, code, errOut, v.want)
		}
	}

	// Mirrored, Running and Ready, with the local pod's status.
	m := c.waitMirrorLike(t, local, 30*time.Second)
	if m.Status.Phase != v1.PodRunning || !podReady(m) {
		t.Errorf("mirror %s, want Running and Ready", mirrorSummary(m))
	}
	// In the mirror's form: the references listed, none in the spec.
	var refs []mirror.LocalReference
	if err := json.Unmarshal([]byte(m.Annotations[mirror.LocalReferencesAnnotation]), &refs); err != nil {
		t.Fatalf("annotation %s = %q: %v", mirror.LocalReferencesAnnotation, m.Annotations[mirror.LocalReferencesAnnotation], err)
	}
	want := []mirror.LocalReference{
		{Field: "spec.containers[0].envFrom[0].secretRef", Kind: "Secret", Name: "creds"},
		{Field: "spec.containers[0].env[0].valueFrom.secretKeyRef", Kind: "Secret", Name: "creds", Key: "password"},
		{Field: "spec.containers[0].env[1].valueFrom.configMapKeyRef", Kind: "ConfigMap", Name: "appconf", Key: "LEVEL"},
		{Field: "spec.imagePullSecrets[0]", Kind: "Secret", Name: "regcred"},
		{Field: "spec.serviceAccountName", Kind: "ServiceAccount", Name: "app-sa"},
	}
	for i, v := range mirrorLocalVolumes {
		want = slices.Insert(want, i, v.ref)
	}
	if !slices.Equal(refs, want) {
		t.Errorf("the mirror's local references:\n got %+v\nwant %+v", refs, want)
	}
	mc := m.Spec.Containers[0]
	wantEnv := []v1.EnvVar{{Name: "PASSWORD"}, {Name: "LEVEL"}, local.Spec.Containers[0].Env[2]}
	if mc.EnvFrom != nil || m.Spec.ImagePullSecrets != nil || !equality.Semantic.DeepEqual(mc.Env, wantEnv) {
		t.Errorf("mirror envFrom %+v, imagePullSecrets %+v, env %+v; want none, none, %+v", mc.EnvFrom, m.Spec.ImagePullSecrets, mc.Env, wantEnv)
	}
	if local.Spec.ServiceAccountName != "app-sa" || m.Spec.ServiceAccountName != "" || m.Spec.DeprecatedServiceAccount != "" || m.Spec.AutomountServiceAccountToken != nil {
		t.Errorf("local serviceAccountName %q; mirror serviceAccountName %q, serviceAccount %q, automountServiceAccountToken set %t: want app-sa; none, none, none",
			local.Spec.ServiceAccountName, m.Spec.ServiceAccountName, m.Spec.DeprecatedServiceAccount, m.Spec.AutomountServiceAccountToken != nil)
	}
	for _, v := range mirrorLocalVolumes {
		for _, mv := range m.Spec.Volumes {
			if mv.Name == v.name && (mv.EmptyDir == nil || mv.Secret != nil || mv.ConfigMap != nil || mv.Projected != nil) {
				t.Errorf("mirror volume %s = %+v, want emptyDir", v.name, mv.VolumeSource)
			}
		}
	}

	// The waiter's status and events in the apiserver name the Secret and
	// the key.
	const missing = "couldn't find key nope in Secret default/creds"
	c.waitMirror(t, "keywaiter-"+node, "waiting in CreateContainerConfigError", 60*time.Second, func(m *v1.Pod) bool {
		w := containerStatus(m, "main").State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError" && w.Message == missing
	})
	d.poll("the waiter's Failed event in the apiserver", 30*time.Second, func() (bool, string) {
		evs, err := cs.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": "keywaiter-" + node, "reason": "Failed"}.String(),
		})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if strings.Contains(e.Message, missing) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d Failed events", len(evs.Items))
	})
	// And the secretuser pod's Started event, sent after its mirror.
	d.poll("secretuser's Started event in the apiserver", 30*time.Second, func() (bool, string) {
		evs, err := cs.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": "secretuser-" + node, "reason": "Started"}.String(),
		})
		if err != nil {
			return false, err.Error()
		}
		return len(evs.Items) > 0, "none yet"
	})

	// What may be there (it shows the search sees the mirrors, their
	// status and events) and what may not.
	present := []string{"secretuser-" + node, mirror.LocalReferencesAnnotation, "regcred", missing}
	values := []string{localPassword, localUser, localConfig, localRegToken, localRegAuth}
	var encoded []string
	for _, v := range values {
		encoded = append(encoded, v, base64.StdEncoding.EncodeToString([]byte(v)))
	}
	check := func(where string, data []byte) {
		t.Helper()
		for _, s := range present {
			if !bytes.Contains(data, []byte(s)) {
				t.Errorf("%s lacks %q: the search for values in it proves nothing", where, s)
			}
		}
		for _, s := range encoded {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds %q, a local object's value", where, s)
			}
		}
	}

	// What the apiserver serves.
	var served bytes.Buffer
	for _, list := range []func() (any, error){
		func() (any, error) { return cs.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{}) },
		func() (any, error) { return cs.CoreV1().Events("").List(t.Context(), metav1.ListOptions{}) },
		func() (any, error) { return cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{}) },
		func() (any, error) { return cs.CoreV1().ConfigMaps("").List(t.Context(), metav1.ListOptions{}) },
		func() (any, error) { return cs.CoreV1().Secrets("").List(t.Context(), metav1.ListOptions{}) },
	} {
		l, err := list()
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		served.Write(data)
	}
	check("the apiserver's pods, events, nodes, configmaps and secrets", served.Bytes())
	check("etcd's keyspace", etcdKeyspace(t, cp))
	check("etcd's files", etcdFiles(t, filepath.Join(cp.Dir, "etcd")))
	logData, err := os.ReadFile(d.logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range encoded {
		if bytes.Contains(logData, []byte(s)) {
			t.Errorf("podvisor's log holds %q, a local object's value", s)
		}
	}
}

// etcdKeyspace is every key and value in etcd now, read through its gRPC
// gateway (POST /v3/kv/range from "\x00" to "\x00": all keys) with the
// apiserver's etcd client certificate.
func etcdKeyspace(t *testing.T, cp *controlplane.ControlPlane) []byte {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(cp.PKIDir, "apiserver-etcd-client.crt"), filepath.Join(cp.PKIDir, "apiserver-etcd-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(cp.PKIDir, "etcd", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
	resp, err := client.Post(cp.EtcdEndpoint+"/v3/kv/range", "application/json", strings.NewReader(`{"key":"AA==","range_end":"AA=="}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("etcd range: %d %v: %s", resp.StatusCode, err, body)
	}
	var r struct {
		Count string `json:"count"`
		KVs   []struct {
			Key   []byte `json:"key"`
			Value []byte `json:"value"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("etcd range: %v", err)
	}
	if fmt.Sprint(len(r.KVs)) != r.Count {
		t.Fatalf("etcd range: %d keys of %s", len(r.KVs), r.Count)
	}
	var out bytes.Buffer
	for _, kv := range r.KVs {
		out.Write(kv.Key)
		out.WriteByte(0)
		out.Write(kv.Value)
		out.WriteByte(0)
	}
	t.Logf("etcd holds %d keys, %d bytes", len(r.KVs), out.Len())
	return out.Bytes()
}

// etcdFiles is the content of every file under etcd's data directory: its
// write-ahead log holds every write, and its database every revision not
// yet compacted.
func etcdFiles(t *testing.T, dir string) []byte {
	t.Helper()
	var out bytes.Buffer
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out.Write(data)
		out.WriteByte(0)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
