package podfile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/version"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestFileErrorString(t *testing.T) {
	tests := []struct {
		err  FileError
		want string
	}{
		{FileError{Path: "/m/a.yaml", Line: 7, Field: "spec.containers[0].image", Reason: "required"}, "/m/a.yaml:7: spec.containers[0].image: required"},
		{FileError{Path: "/m/a.yaml", Field: "kind", Reason: "bad"}, "/m/a.yaml: kind: bad"},
		{FileError{Path: "/m/a.yaml", Line: 3, Reason: "empty file"}, "/m/a.yaml:3: empty file"},
		{FileError{Path: "/m/a.yaml", Reason: "empty file"}, "/m/a.yaml: empty file"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if !errors.Is(&tt.err, ErrInvalid) {
			t.Errorf("%q does not wrap ErrInvalid", tt.want)
		}
	}
	ioErr := &FileError{Path: "/m", Reason: "read", Err: os.ErrPermission}
	if errors.Is(ioErr, ErrInvalid) || !errors.Is(ioErr, os.ErrPermission) {
		t.Errorf("an I/O FileError must wrap its cause, not ErrInvalid")
	}
	if !errors.Is(ErrDuplicate, ErrInvalid) {
		t.Errorf("ErrDuplicate must wrap ErrInvalid")
	}
}

func TestParseFileGood(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		wantPods []string // namespace/name
		wantDocs []int
	}{
		{"single yaml", basePod, []string{"default/web-node-1"}, []int{0}},
		{"namespace kept", strings.Replace(basePod, "  name: web\n", "  name: web\n  namespace: kube-system\n", 1),
			[]string{"kube-system/web-node-1"}, []int{0}},
		{"multi document with empty documents and comments",
			"---\n# leading comment\n---\n" + basePod + "--- # second\n" + strings.Replace(basePod, "name: web", "name: db", 1) + "---\n",
			[]string{"default/web-node-1", "default/db-node-1"}, []int{0, 1}},
		{"json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"app","image":"busybox:1.36"}]}}`,
			[]string{"default/web-node-1"}, []int{0}},
		{"List", `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: a}
  spec: {containers: [{name: app, image: busybox}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: b}
  spec: {containers: [{name: app, image: busybox}]}
`, []string{"default/a-node-1", "default/b-node-1"}, []int{0, 0}},
		{"PodList without item kinds", `apiVersion: v1
kind: PodList
items:
- metadata: {name: a}
  spec: {containers: [{name: app, image: busybox}]}
`, []string{"default/a-node-1"}, []int{0}},
		{"anchors and merge keys", `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: app
    image: &img busybox
    resources: {limits: &lim {cpu: 100m}}
  - name: side
    image: *img
    resources: {limits: {<<: *lim, memory: 10Mi}}
`, []string{"default/web-node-1"}, []int{0}},
		{"windows line endings", strings.ReplaceAll(basePod, "\n", "\r\n"), []string{"default/web-node-1"}, []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := mustParse(t, "/etc/manifests/web.yaml", tt.data)
			var keys []string
			var docs []int
			for _, p := range pods {
				keys = append(keys, p.Key())
				docs = append(docs, p.Doc)
				if p.Path != "/etc/manifests/web.yaml" {
					t.Errorf("Path = %q", p.Path)
				}
			}
			if !slices.Equal(keys, tt.wantPods) || !slices.Equal(docs, tt.wantDocs) {
				t.Errorf("pods %v docs %v, want %v %v", keys, docs, tt.wantPods, tt.wantDocs)
			}
		})
	}
}

func TestParseFileBad(t *testing.T) {
	ver := version.Version
	tests := []struct {
		name     string
		data     string
		want     []string // substrings of the joined errors
		wantLine int      // line of the first error; 0: not checked
	}{
		{"empty file", "", []string{"/m/x.yaml: empty file"}, 0},
		{"whitespace only", "  \n\n\t\n", []string{"empty file"}, 0},
		{"comments only", "# nothing\n---\n# here\n", []string{"no documents"}, 0},
		{"yaml syntax error", basePod + "  - name: [unclosed\n", []string{"did not find expected"}, 9},
		{"not a mapping", "- a\n- b\n", []string{"not a mapping"}, 1},
		{"wrong apiVersion", strings.Replace(basePod, "apiVersion: v1", "apiVersion: apps/v1", 1), []string{`apiVersion: must be "v1", got "apps/v1"`}, 1},
		{"missing kind", strings.Replace(basePod, "kind: Pod\n", "", 1), []string{`kind: must be Pod`}, 0},
		{"other kind", strings.Replace(basePod, "kind: Pod", "kind: Deployment", 1), []string{`got "Deployment"`}, 2},
		{"unknown top-level field", basePod + "extra: 1\n", []string{"x.yaml:9: extra: unknown field"}, 9},
		{"unknown nested field", basePod + "    imagePullPolicyy: Always\n", []string{"spec.containers[0].imagePullPolicyy: unknown field"}, 9},
		{"field in wrong case", basePod + "    Image: other\n", []string{"spec.containers[0].Image: unknown field"}, 9},
		{"unknown field in second document", basePod + "---\n" + basePod + "    bogus: 1\n", []string{"x.yaml:18: spec.containers[0].bogus: unknown field"}, 18},
		{"unknown field in list item", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\n  spec: {containers: [{name: app, image: busybox, nope: 1}]}\n",
			[]string{"items[0].spec.containers[0].nope: unknown field"}, 7},
		{"list item of other kind", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: a}\n", []string{"items[0]: list items must be v1 Pods"}, 4},
		{"wrong type", basePod + "    ports:\n    - containerPort: http\n", []string{"spec.containers[0].ports[0].containerPort: must be an integer, not a string"}, 10},
		{"duplicate key", basePod + "    image: again\n", []string{`"image" already set`}, 9},
		{"two pods with one name", basePod + "---\n" + basePod, []string{"pod default/web-node-1 is defined twice"}, 0},
		{"content on a separator line", basePod + "--- foo: bar\n", []string{"x.yaml:9: "}, 9},
		{"bad quantity", basePod + "    resources:\n      limits: {cpu: lots}\n", []string{`spec.containers[0].resources.limits[cpu]: "lots" is not a quantity`}, 10},

		// Field table: rejected fields and values.
		{"rejected container field", basePod + "    lifecycle:\n      preStop:\n        tcpSocket: {port: 80}\n",
			[]string{"spec.containers[0].lifecycle.preStop.tcpSocket: not supported by podvisor " + ver}, 11},
		{"stdin without tty", basePod + "    stdin: true\n",
			[]string{"spec.containers[0].stdin: stdin without tty: true is not supported"}, 0},
		{"rejected probe field", basePod + "    livenessProbe:\n      grpc: {port: 9000, mode: TLS}\n", []string{"spec.containers[0].livenessProbe.grpc.mode: not supported"}, 10},
		{"rejected pod field", basePod + "  readinessGates: [{conditionType: x}]\n", []string{"spec.readinessGates: not supported by podvisor " + ver + " (conditions are set by controllers that static pods do not have)"}, 9},
		{"invalid service account name", basePod + "  serviceAccountName: Not_Valid\n", []string{"spec.serviceAccountName: Invalid value"}, 9},
		{"rejected init container field", basePod + "  initContainers:\n  - name: init\n    image: busybox\n    restartPolicy: OnFailure\n", []string{"spec.initContainers[0].restartPolicy: not supported by podvisor " + ver + ` ("OnFailure"; Always (a sidecar container) only)`}, 12},
		{"unsupported volume source", basePod + "  volumes:\n  - name: d\n    nfs: {server: s, path: /x}\n", []string{"spec.volumes[0].nfs: not supported by podvisor " + ver}, 11},
		{"nfs volume", basePod + "  volumes:\n  - name: d\n    nfs: {server: s, path: /x}\n", []string{"spec.volumes[0].nfs: not supported"}, 0},
		{"service account token", basePod + "  volumes:\n  - name: d\n    projected:\n      sources:\n      - configMap: {name: c}\n      - serviceAccountToken: {path: token}\n",
			[]string{"spec.volumes[0].projected.sources[1].serviceAccountToken: not supported by podvisor", "static pods cannot use service account tokens"}, 0},
		{"cluster trust bundle", basePod + "  volumes:\n  - name: d\n    projected:\n      sources:\n      - clusterTrustBundle: {name: b, path: ca.pem}\n",
			[]string{"spec.volumes[0].projected.sources[0].clusterTrustBundle: not supported"}, 0},
		{"windows pod", basePod + "  os: {name: windows}\n", []string{"spec.os.name: not supported"}, 0},
		{"user namespace with the host's network", basePod + "  hostUsers: false\n  hostNetwork: true\n", []string{"spec.hostNetwork: Forbidden: when `hostUsers` is false"}, 10},
		{"env fileKeyRef", basePod + "    env:\n    - name: A\n      valueFrom: {fileKeyRef: {volumeName: v, path: p, key: k}}\n", []string{`spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Not found: "v"`}, 11},
		{"gpu fraction", basePod + "    resources:\n      limits: {nvidia.com/gpu: 500m}\n", []string{"spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: \"500m\": must be an integer"}, 10},
		{"hugepages request", basePod + "    resources:\n      requests: {hugepages-2Mi: 10Mi}\n", []string{"resources.requests[hugepages-2Mi]: not supported"}, 0},
		{"resource claims", basePod + "    resources:\n      claims: [{name: gpu}]\n", []string{"spec.containers[0].resources.claims: not supported"}, 0},
		{"mount propagation", basePod + "    volumeMounts: [{name: d, mountPath: /d, mountPropagation: Bidirectional}]\n  volumes: [{name: d, emptyDir: {}}]\n",
			[]string{"volumeMounts[0].mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"}, 0},
		{"recursive read-only", basePod + "    volumeMounts: [{name: d, mountPath: /d, recursiveReadOnly: Enabled}]\n  volumes: [{name: d, emptyDir: {}}]\n",
			[]string{"volumeMounts[0].recursiveReadOnly: not supported"}, 0},
		{"subPathExpr with subPath", basePod + "    volumeMounts: [{name: d, mountPath: /d, subPath: a, subPathExpr: $(X)}]\n  volumes: [{name: d, emptyDir: {}}]\n",
			[]string{"volumeMounts[0].subPathExpr: Invalid value: \"$(X)\": subPathExpr and subPath are mutually exclusive"}, 0},
		{"subPathExpr absolute", basePod + "    volumeMounts: [{name: d, mountPath: /d, subPathExpr: /$(X)}]\n  volumes: [{name: d, emptyDir: {}}]\n",
			[]string{"volumeMounts[0].subPathExpr: Invalid value: \"/$(X)\": must be a relative path"}, 0},
		{"seccomp localhost outside the profile root", basePod + "    securityContext:\n      seccompProfile: {type: Localhost, localhostProfile: ../p.json}\n",
			[]string{"securityContext.seccompProfile.localhostProfile: Invalid value: \"../p.json\": must not contain '..'"}, 0},
		{"apparmor localhost without a profile", basePod + "    securityContext:\n      appArmorProfile: {type: Localhost}\n",
			[]string{"securityContext.appArmorProfile.localhostProfile: Required value: must be set when AppArmor type is Localhost"}, 10},
		{"unmasked proc", basePod + "    securityContext: {procMount: Unmasked}\n", []string{"securityContext.procMount: not supported"}, 0},
		{"net sysctl with hostNetwork", basePod + "  hostNetwork: true\n  securityContext: {sysctls: [{name: net.core.somaxconn, value: '1024'}]}\n", []string{"spec.securityContext.sysctls[0].name: Invalid value: \"net.core.somaxconn\": may not be specified when 'hostNetwork' is true"}, 0},
		{"one good one bad document", basePod + "---\n" + strings.Replace(basePod, "name: web", "name: db", 1) + "    volumeDevices: [{name: d, devicePath: /dev/xvda}]\n",
			[]string{"x.yaml:18: spec.containers[0].volumeDevices"}, 18},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := parseDefault("/m/x.yaml", []byte(tt.data), node)
			if len(errs) == 0 {
				t.Fatalf("no error, want %q", tt.want)
			}
			all := joinErrs(errs)
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("errors:\n%s\nwant substring %q", all, w)
				}
			}
			if tt.wantLine != 0 && errs[0].Line != tt.wantLine {
				t.Errorf("first error at line %d, want %d: %v", errs[0].Line, tt.wantLine, errs[0])
			}
			for _, e := range errs {
				if !errors.Is(e, ErrInvalid) {
					t.Errorf("%v does not wrap ErrInvalid", e)
				}
				if e.Path != "/m/x.yaml" {
					t.Errorf("error path %q", e.Path)
				}
			}
		})
	}
}

func TestParseFileTooLarge(t *testing.T) {
	data := []byte(basePod + "# " + strings.Repeat("x", MaxFileSize) + "\n")
	_, errs := parseDefault("/m/big.yaml", data, node)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "larger than") {
		t.Fatalf("errors = %v, want one 'larger than' error", errs)
	}
}

func TestIdentity(t *testing.T) {
	const path = "/etc/kubernetes/manifests/web.yaml"
	uid := func(t *testing.T, path, data, nodeName string) string {
		t.Helper()
		pods, errs := parseDefault(path, []byte(data), nodeName)
		if len(errs) > 0 || len(pods) != 1 {
			t.Fatalf("parse: %v pods, errors %v", len(pods), errs)
		}
		return pods[0].Hash
	}
	base := uid(t, path, basePod, node)

	same := []struct{ name, data string }{
		{"comments and blank lines", "# web server\n\n" + strings.Replace(basePod, "spec:\n", "spec: # the spec\n\n", 1)},
		{"key order", "kind: Pod\nspec:\n  containers:\n  - image: busybox:1.36\n    name: app\nmetadata:\n  name: web\napiVersion: v1\n"},
		{"quoting and flow style", `apiVersion: "v1"
kind: 'Pod'
metadata: {name: "web"}
spec: {containers: [{name: app, image: "busybox:1.36"}]}
`},
		{"json", `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web"},"spec":{"containers":[{"image":"busybox:1.36","name":"app"}]}}`},
		{"leading separator", "---\n" + basePod},
	}
	for _, tt := range same {
		t.Run("same/"+tt.name, func(t *testing.T) {
			if got := uid(t, path, tt.data, node); got != base {
				t.Errorf("UID %s, want %s (reformatting must keep the UID)", got, base)
			}
		})
	}

	differs := []struct{ name, path, data, node string }{
		{"image", path, strings.Replace(basePod, "busybox:1.36", "busybox:1.37", 1), node},
		{"explicit default value", path, basePod + "  restartPolicy: Always\n", node},
		{"path", "/etc/kubernetes/manifests/web2.yaml", basePod, node},
		{"node", path, basePod, "node-2"},
	}
	for _, tt := range differs {
		t.Run("differs/"+tt.name, func(t *testing.T) {
			if got := uid(t, tt.path, tt.data, tt.node); got == base {
				t.Errorf("UID unchanged (%s) after changing %s", got, tt.name)
			}
		})
	}

	t.Run("hash covers the decoded pod, not defaults or time", func(t *testing.T) {
		var decoded v1.Pod
		if err := yaml.UnmarshalStrict([]byte(basePod), &decoded); err != nil {
			t.Fatal(err)
		}
		canonical, err := json.Marshal(&decoded)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		h.Write(canonical)
		h.Write([]byte{0})
		h.Write([]byte(path))
		h.Write([]byte{0})
		h.Write([]byte(node))
		if want := hex.EncodeToString(h.Sum(nil))[:32]; base != want {
			t.Errorf("UID %s, want %s", base, want)
		}

		t1 := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
		a, _ := parseFile(path, []byte(basePod), node, t1)
		b, _ := parseFile(path, []byte(basePod), node, t1.Add(time.Hour))
		if a[0].Hash != b[0].Hash {
			t.Errorf("config.seen changed the UID")
		}
		if got := a[0].Pod.Annotations[AnnotationConfigSeen]; got != "2030-01-02T03:04:05.000000006Z" {
			t.Errorf("config.seen = %q", got)
		}
	})

	t.Run("identity fields", func(t *testing.T) {
		pods := mustParse(t, path, strings.Replace(basePod, "  name: web\n", "  name: web\n  annotations: {team: a}\n", 1))
		p := pods[0]
		pod := p.Pod
		if !uidRE.MatchString(p.Hash) || string(pod.UID) != p.Hash {
			t.Errorf("UID %q, Hash %q", pod.UID, p.Hash)
		}
		checks := map[string][2]string{
			"name":        {pod.Name, "web-node-1"},
			"namespace":   {pod.Namespace, "default"},
			"nodeName":    {pod.Spec.NodeName, node},
			"config.hash": {pod.Annotations[AnnotationConfigHash], p.Hash},
			"source":      {pod.Annotations[AnnotationConfigSource], "file"},
			"user annot.": {pod.Annotations["team"], "a"},
		}
		for what, c := range checks {
			if c[0] != c[1] {
				t.Errorf("%s = %q, want %q", what, c[0], c[1])
			}
		}
		if _, err := time.Parse(time.RFC3339Nano, pod.Annotations[AnnotationConfigSeen]); err != nil {
			t.Errorf("config.seen: %v", err)
		}
	})

	t.Run("node name is lower-cased in the pod name and spec.nodeName", func(t *testing.T) {
		pods, errs := parseDefault(path, []byte(basePod), "Node-A")
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if pods[0].Pod.Name != "web-node-a" || pods[0].Pod.Spec.NodeName != "node-a" {
			t.Errorf("name %q nodeName %q", pods[0].Pod.Name, pods[0].Pod.Spec.NodeName)
		}
	})
}

func TestDefaults(t *testing.T) {
	data := basePod + `    ports:
    - containerPort: 8080
    resources:
      limits: {cpu: 500m, memory: 64Mi}
      requests: {memory: 32Mi}
  - name: side
    image: registry.local:5000/side
  initContainers:
  - name: init
    image: busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000
  volumes:
  - name: scratch
  - name: host
    hostPath: {path: /var/log}
`
	pod := mustParse(t, "/m/web.yaml", data)[0].Pod
	spec := pod.Spec
	app, side, init := spec.Containers[0], spec.Containers[1], spec.InitContainers[0]
	tests := []struct {
		what      string
		got, want any
	}{
		{"restartPolicy", spec.RestartPolicy, v1.RestartPolicyAlways},
		{"dnsPolicy", spec.DNSPolicy, v1.DNSClusterFirst},
		{"terminationGracePeriodSeconds", *spec.TerminationGracePeriodSeconds, int64(30)},
		{"schedulerName", spec.SchedulerName, "default-scheduler"},
		{"securityContext set", spec.SecurityContext != nil, true},
		{"enableServiceLinks", *spec.EnableServiceLinks, true},
		{"tagged image pull policy", app.ImagePullPolicy, v1.PullIfNotPresent},
		{"untagged image pull policy", side.ImagePullPolicy, v1.PullAlways},
		{"digest image pull policy", init.ImagePullPolicy, v1.PullIfNotPresent},
		{"terminationMessagePath", app.TerminationMessagePath, "/dev/termination-log"},
		{"init terminationMessagePath", init.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", app.TerminationMessagePolicy, v1.TerminationMessageReadFile},
		{"port protocol", app.Ports[0].Protocol, v1.ProtocolTCP},
		{"hostPort without hostNetwork", app.Ports[0].HostPort, int32(0)},
		{"cpu request from limit", app.Resources.Requests.Cpu().String(), "500m"},
		{"memory request kept", app.Resources.Requests.Memory().String(), "32Mi"},
		{"volume without source is emptyDir", spec.Volumes[0].EmptyDir != nil, true},
		{"emptyDir medium", spec.Volumes[0].EmptyDir.Medium, v1.StorageMediumDefault},
		{"hostPath type", *spec.Volumes[1].HostPath.Type, v1.HostPathUnset},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.what, tt.got, tt.want)
		}
	}

	// SetDefaults_Pod: a negative grace period means 1 second, so kubelet
	// accepts it.
	negative := mustParse(t, "/m/web.yaml", basePod+"  terminationGracePeriodSeconds: -1\n")[0].Pod
	if g := *negative.Spec.TerminationGracePeriodSeconds; g != 1 {
		t.Errorf("terminationGracePeriodSeconds -1 became %d, want 1", g)
	}

	hostNet := mustParse(t, "/m/web.yaml", basePod+"    ports: [{containerPort: 8080}, {containerPort: 9090, hostPort: 9090}]\n  hostNetwork: true\n")[0].Pod
	if hp := hostNet.Spec.Containers[0].Ports[0].HostPort; hp != 8080 {
		t.Errorf("hostNetwork hostPort = %d, want containerPort 8080", hp)
	}

	pullPolicies := []struct {
		image string
		want  v1.PullPolicy
	}{
		{"busybox", v1.PullAlways},
		{"busybox:latest", v1.PullAlways},
		{"busybox:1.36", v1.PullIfNotPresent},
		{"localhost:5000/busybox", v1.PullAlways},
		{"localhost:5000/busybox:v1", v1.PullIfNotPresent},
		{"busybox@sha256:abc", v1.PullIfNotPresent},
		{"busybox:latest@sha256:abc", v1.PullIfNotPresent}, // the digest decides, as in Kubernetes
	}
	for _, tt := range pullPolicies {
		data := strings.Replace(basePod, "image: busybox:1.36", "image: "+tt.image, 1)
		if got := mustParse(t, "/m/web.yaml", data)[0].Pod.Spec.Containers[0].ImagePullPolicy; got != tt.want {
			t.Errorf("imagePullPolicy of %q = %s, want %s", tt.image, got, tt.want)
		}
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name  string
		extra string
		want  []string
	}{
		{"no warnings for defaults", "  schedulerName: default-scheduler\n  enableServiceLinks: true\n  nodeName: node-1\n  automountServiceAccountToken: false\n  preemptionPolicy: PreemptLowerPriority\n", nil},
		{"tolerations", "  tolerations: [{operator: Exists}]\n", []string{"spec.tolerations: ignored by podvisor (scheduling only)"}},
		{"other node", "  nodeName: elsewhere\n", []string{"spec.nodeName: ignored by podvisor (set to this node)"}},
		{"several", "  nodeSelector: {a: b}\n  priorityClassName: system-node-critical\n  tolerations: [{operator: Exists}]\n  imagePullSecrets: [{name: s}]\n",
			[]string{"spec.nodeSelector: ignored by podvisor (there is only this node)",
				"spec.tolerations: ignored by podvisor (scheduling only)"}},
		{"ephemeral storage is enforced by eviction", "    resources: {limits: {ephemeral-storage: 1Gi}}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "/m/w.yaml", basePod+tt.extra)[0]
			got := slices.Clone(p.Warnings)
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("warnings\n got %q\nwant %q", got, want)
			}
		})
	}
	p := mustParse(t, "/m/w.yaml", strings.Replace(basePod, "  name: web\n", "  name: web\n  uid: abc\n", 1))[0]
	if len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], "metadata.uid: ignored by podvisor") || p.Hash == "abc" {
		t.Errorf("metadata.uid: warnings %q, UID %s", p.Warnings, p.Hash)
	}
}
