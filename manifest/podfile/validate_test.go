package podfile

import (
	"slices"
	"strings"
	"testing"
)

// withSpec is a manifest named name with the given spec body (indented by
// two spaces under "spec:").
func withSpec(name, spec string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

const oneContainer = "  containers:\n  - name: app\n    image: busybox\n"

func TestValidateAccepts(t *testing.T) {
	// Every implemented field at once, the way an etcd static pod uses them.
	data := withSpec("etcd", `  hostNetwork: true
  hostPID: false
  hostIPC: false
  hostname: etcd-host
  priorityClassName: system-node-critical
  restartPolicy: OnFailure
  dnsPolicy: None
  dnsConfig:
    nameservers: [127.0.0.53, "::1"]
    searches: [example.org]
    options: [{name: ndots, value: "2"}]
  hostAliases: [{ip: 10.0.0.1, hostnames: [etcd.local]}]
  terminationGracePeriodSeconds: 0
  os: {name: linux}
  hostUsers: true
  securityContext: {runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true, supplementalGroups: [4, 5]}
  volumes:
  - name: data
    hostPath: {path: /var/lib/etcd, type: DirectoryOrCreate}
  - name: tmp
    emptyDir: {medium: Memory, sizeLimit: 64Mi}
  initContainers:
  - name: init
    image: busybox
    command: [sh, -c, "true"]
  containers:
  - name: etcd
    image: registry.k8s.io/etcd:3.5.15-0
    command: [etcd]
    args: [--data-dir=/var/lib/etcd]
    workingDir: /var/lib/etcd
    env: [{name: ETCD_NAME, value: one}, {name: GODEBUG, value: ""},
      {name: POD, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}},
      {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}},
      {name: K, valueFrom: {configMapKeyRef: {name: conf, key: k}}},
      {name: P, valueFrom: {secretKeyRef: {name: creds, key: p, optional: true}}}]
    envFrom: [{configMapRef: {name: conf}}, {prefix: S_, secretRef: {name: creds, optional: true}}]
    ports:
    - {name: client, containerPort: 2379}
    - {name: peer, containerPort: 2380, protocol: TCP}
    - {name: metrics, containerPort: 2381, protocol: UDP, hostIP: 127.0.0.1}
    resources:
      requests: {cpu: 100m, memory: 100Mi}
      limits: {cpu: "1", memory: 1Gi}
    volumeMounts:
    - {name: data, mountPath: /var/lib/etcd}
    - {name: tmp, mountPath: /tmp, subPath: etcd, readOnly: false, mountPropagation: None, recursiveReadOnly: Disabled}
    terminationMessagePath: /tmp/term
    terminationMessagePolicy: FallbackToLogsOnError
    imagePullPolicy: Never
    securityContext:
      capabilities: {add: [NET_ADMIN], drop: [ALL]}
      privileged: false
      runAsUser: 0
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      procMount: Default
      seccompProfile: {type: RuntimeDefault}
      appArmorProfile: {type: Unconfined}
`)
	pods := mustParse(t, "/m/etcd.yaml", data)
	if len(pods) != 1 {
		t.Fatalf("%d pods", len(pods))
	}
	if w := pods[0].Warnings; len(w) != 0 {
		t.Errorf("warnings %q, want none (priorityClassName decides the OOM score)", w)
	}
}

func TestValidateRejects(t *testing.T) {
	long := strings.Repeat("a", 250)
	tests := []struct {
		name   string
		data   string
		field  string
		reason string // substring
	}{
		// TestValidatePod name cases.
		{"name missing", strings.Replace(withSpec("x", oneContainer), "  name: x\n", "  labels: {a: b}\n", 1), "metadata.name", "Required value"},
		{"name not a subdomain", withSpec("Web_1", oneContainer), "metadata.name", "lowercase RFC 1123 subdomain"},
		{"full name too long", withSpec(long, oneContainer), "metadata.name", `-node-1": must be no more than 253 characters`},
		{"namespace not a label", strings.Replace(withSpec("web", oneContainer), "  name: web\n", "  name: web\n  namespace: a.b\n", 1), "metadata.namespace", "must not contain dots"},

		// TestValidateContainers / TestValidateInitContainers.
		{"no containers", withSpec("web", "  restartPolicy: Always\n"), "spec.containers", "Required value"},
		{"container name missing", withSpec("web", "  containers:\n  - image: busybox\n"), "spec.containers[0].name", "Required value"},
		{"container name not a label", withSpec("web", "  containers:\n  - name: App.1\n    image: busybox\n"), "spec.containers[0].name", "RFC 1123 label"},
		{"duplicate container names across init and app", withSpec("web", "  initContainers:\n  - name: app\n    image: busybox\n"+oneContainer),
			"spec.initContainers[0].name", `Duplicate value: "app"`},
		{"image missing", withSpec("web", "  containers:\n  - name: app\n"), "spec.containers[0].image", "Required value"},
		{"image blank", withSpec("web", "  containers:\n  - name: app\n    image: \" \"\n"), "spec.containers[0].image", "must not have leading or trailing whitespace"},
		{"image with whitespace", withSpec("web", "  containers:\n  - name: app\n    image: \"busybox \"\n"), "spec.containers[0].image", "whitespace"},
		{"bad pull policy", withSpec("web", oneContainer+"    imagePullPolicy: Sometimes\n"), "spec.containers[0].imagePullPolicy", `Unsupported value: "Sometimes"`},
		{"bad termination message policy", withSpec("web", oneContainer+"    terminationMessagePolicy: Log\n"), "spec.containers[0].terminationMessagePolicy", `Unsupported value: "Log"`},
		{"relative workingDir", withSpec("web", oneContainer+"    workingDir: srv\n"), "spec.containers[0].workingDir", "absolute"},
		{"env name missing", withSpec("web", oneContainer+"    env: [{value: x}]\n"), "spec.containers[0].env[0].name", "Required value"},
		{"env name with =", withSpec("web", oneContainer+"    env: [{name: \"A=B\", value: x}]\n"), "spec.containers[0].env[0].name", "environment variable name"},

		// TestValidateRestartPolicy, TestValidateDNSPolicy, TestValidatePodDNSConfig.
		{"restart policy", withSpec("web", oneContainer+"  restartPolicy: Sometimes\n"), "spec.restartPolicy", `Unsupported value: "Sometimes"`},
		{"dns policy", withSpec("web", oneContainer+"  dnsPolicy: Google\n"), "spec.dnsPolicy", `Unsupported value: "Google"`},
		{"dns None without nameservers", withSpec("web", oneContainer+"  dnsPolicy: None\n"), "spec.dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None"},
		{"too many nameservers", withSpec("web", oneContainer+"  dnsConfig: {nameservers: [1.1.1.1, 1.0.0.1, 8.8.8.8, 8.8.4.4]}\n"), "spec.dnsConfig.nameservers", "more than 3"},
		{"nameserver not an IP", withSpec("web", oneContainer+"  dnsConfig: {nameservers: [dns.local]}\n"), "spec.dnsConfig.nameservers[0]", "valid IP"},
		{"bad search", withSpec("web", oneContainer+"  dnsConfig: {searches: [\"-bad\"]}\n"), "spec.dnsConfig.searches[0]", "subdomain"},

		// TestValidatePodSpec.
		{"hostname", withSpec("web", oneContainer+"  hostname: Web.Host\n"), "spec.hostname", "RFC 1123 label"},
		{"hostAlias ip", withSpec("web", oneContainer+"  hostAliases: [{ip: nope, hostnames: [a]}]\n"), "spec.hostAliases[0].ip", "valid IP"},
		{"pod runAsUser", withSpec("web", oneContainer+"  securityContext: {runAsUser: -1}\n"), "spec.securityContext.runAsUser", "between 0 and"},
		{"privileged without escalation", withSpec("web", oneContainer+"    securityContext: {privileged: true, allowPrivilegeEscalation: false}\n"),
			"spec.containers[0].securityContext", "Invalid value: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"},

		// Capability names with the kernel's CAP_ prefix grant nothing under
		// the CRI; podvisor refuses them rather than grant them.
		{"CAP_ in add", withSpec("web", oneContainer+"    securityContext: {capabilities: {add: [NET_ADMIN, CAP_SYS_ADMIN]}}\n"),
			"spec.containers[0].securityContext.capabilities.add[1]", `"CAP_SYS_ADMIN": capability names have no CAP_ prefix in Kubernetes (write "SYS_ADMIN"); under kubelet this name matches no capability and grants nothing`},
		{"cap_ in drop, lower case", withSpec("web", oneContainer+"    securityContext: {capabilities: {drop: [cap_net_raw]}}\n"),
			"spec.containers[0].securityContext.capabilities.drop[0]", `"cap_net_raw": capability names have no CAP_ prefix in Kubernetes (write "NET_RAW")`},
		{"CAP_ in an init container", withSpec("web", "  initContainers:\n  - name: init\n    image: busybox\n    securityContext: {capabilities: {add: [CAP_NET_ADMIN]}}\n"+oneContainer),
			"spec.initContainers[0].securityContext.capabilities.add[0]", "no CAP_ prefix"},

		// TestValidatePorts.
		{"container port 0", withSpec("web", oneContainer+"    ports: [{containerPort: 0}]\n"), "spec.containers[0].ports[0].containerPort", "Required value"},
		{"container port too big", withSpec("web", oneContainer+"    ports: [{containerPort: 65536}]\n"), "spec.containers[0].ports[0].containerPort", "between 1 and 65535"},
		{"host port too big", withSpec("web", oneContainer+"    ports: [{containerPort: 80, hostPort: 70000}]\n"), "spec.containers[0].ports[0].hostPort", "between 1 and 65535"},
		{"protocol", withSpec("web", oneContainer+"    ports: [{containerPort: 80, protocol: ICMP}]\n"), "spec.containers[0].ports[0].protocol", `Unsupported value: "ICMP"`},
		{"port name", withSpec("web", oneContainer+"    ports: [{containerPort: 80, name: Http_1}]\n"), "spec.containers[0].ports[0].name", ""},
		{"port name too long", withSpec("web", oneContainer+"    ports: [{containerPort: 80, name: abcdefghijklmnop}]\n"), "spec.containers[0].ports[0].name", "no more than 15"},
		{"duplicate port name", withSpec("web", oneContainer+"    ports: [{containerPort: 80, name: http}, {containerPort: 81, name: http}]\n"), "spec.containers[0].ports[1].name", `Duplicate value: "http"`},
		{"duplicate host port across containers", withSpec("web", oneContainer+"    ports: [{containerPort: 80, hostPort: 8080}]\n  - name: b\n    image: busybox\n    ports: [{containerPort: 81, hostPort: 8080}]\n"),
			"spec.containers[1].ports[0].hostPort", `Duplicate value: "TCP//8080"`},
		{"duplicate host port via hostNetwork default", withSpec("web", "  hostNetwork: true\n"+oneContainer+"    ports: [{containerPort: 80}, {containerPort: 81, hostPort: 80}]\n"),
			"spec.containers[0].ports[1].hostPort", `Duplicate value: "TCP//80"`},
		{"bad hostIP", withSpec("web", oneContainer+"    ports: [{containerPort: 80, hostIP: localhost}]\n"), "spec.containers[0].ports[0].hostIP", "valid IP"},

		// TestValidateResourceRequirements.
		{"cpu request above limit", withSpec("web", oneContainer+"    resources: {requests: {cpu: \"2\"}, limits: {cpu: \"1\"}}\n"),
			"spec.containers[0].resources.requests", `Invalid value: "2": must be less than or equal to cpu limit of 1`},
		{"memory request above limit", withSpec("web", oneContainer+"    resources: {requests: {memory: 2Gi}, limits: {memory: 1Gi}}\n"),
			"spec.containers[0].resources.requests", "must be less than or equal to memory limit of 1Gi"},
		{"negative quantity", withSpec("web", oneContainer+"    resources: {limits: {memory: -1Gi}}\n"), "spec.containers[0].resources.limits[memory]", `Invalid value: "-1Gi": must be greater than or equal to 0`},

		// TestValidateVolumes.
		{"volume name missing", withSpec("web", oneContainer+"  volumes: [{emptyDir: {}}]\n"), "spec.volumes[0].name", "Required value"},
		{"volume name not a label", withSpec("web", oneContainer+"  volumes: [{name: Data, emptyDir: {}}]\n"), "spec.volumes[0].name", "RFC 1123 label"},
		{"duplicate volume", withSpec("web", oneContainer+"  volumes: [{name: d, emptyDir: {}}, {name: d, emptyDir: {}}]\n"), "spec.volumes[1].name", `Duplicate value: "d"`},
		{"two sources", withSpec("web", oneContainer+"  volumes: [{name: d, emptyDir: {}, hostPath: {path: /x}}]\n"), "spec.volumes[0].hostPath", "may not specify more than 1 volume type"},
		{"hostPath relative", withSpec("web", oneContainer+"  volumes: [{name: d, hostPath: {path: var/x}}]\n"), "spec.volumes[0].hostPath.path", "absolute"},
		{"hostPath backsteps", withSpec("web", oneContainer+"  volumes: [{name: d, hostPath: {path: /var/../etc}}]\n"), "spec.volumes[0].hostPath.path", "'..'"},
		{"hostPath type", withSpec("web", oneContainer+"  volumes: [{name: d, hostPath: {path: /x, type: Folder}}]\n"), "spec.volumes[0].hostPath.type", `Unsupported value: "Folder"`},
		{"emptyDir hugepages", withSpec("web", oneContainer+"  volumes: [{name: d, emptyDir: {medium: HugePages}}]\n"), "spec.volumes[0].emptyDir.medium", "not supported"},

		// TestValidateVolumeMounts.
		{"mount of unknown volume", withSpec("web", oneContainer+"    volumeMounts: [{name: nope, mountPath: /x}]\n"), "spec.containers[0].volumeMounts[0].name", `Not found: "nope"`},
		{"mount path relative", withSpec("web", oneContainer+"    volumeMounts: [{name: d, mountPath: x}]\n  volumes: [{name: d, emptyDir: {}}]\n"),
			"spec.containers[0].volumeMounts[0].mountPath", "absolute"},
		{"mount path missing", withSpec("web", oneContainer+"    volumeMounts: [{name: d}]\n  volumes: [{name: d, emptyDir: {}}]\n"),
			"spec.containers[0].volumeMounts[0].mountPath", "Required value"},
		{"mount path twice", withSpec("web", oneContainer+"    volumeMounts: [{name: d, mountPath: /x}, {name: d, mountPath: /x/}]\n  volumes: [{name: d, emptyDir: {}}]\n"),
			"spec.containers[0].volumeMounts[1].mountPath", "mounted twice"},
		{"subPath escapes", withSpec("web", oneContainer+"    volumeMounts: [{name: d, mountPath: /x, subPath: ../etc}]\n  volumes: [{name: d, emptyDir: {}}]\n"),
			"spec.containers[0].volumeMounts[0].subPath", "'..'"},
		{"subPath absolute", withSpec("web", oneContainer+"    volumeMounts: [{name: d, mountPath: /x, subPath: /etc}]\n  volumes: [{name: d, emptyDir: {}}]\n"),
			"spec.containers[0].volumeMounts[0].subPath", "relative"},
	}
	// Cases with more than one error, each true.
	errorCount := map[string]int{
		"duplicate host port via hostNetwork default": 2, // and it differs from its containerPort
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, errs := parseDefault("/m/x.yaml", []byte(tt.data), node)
			if len(pods) != 0 {
				t.Errorf("got a pod from an invalid manifest")
			}
			// One mistake, one error: a check podvisor makes must not
			// repeat one of Kubernetes'.
			if n := max(errorCount[tt.name], 1); len(errs) != n {
				t.Errorf("%d errors, want %d:\n%s", len(errs), n, joinErrs(errs))
			}
			for _, e := range errs {
				if e.Field == tt.field && strings.Contains(e.Reason, tt.reason) {
					if e.Line == 0 {
						t.Errorf("%v: no line", e)
					}
					return
				}
			}
			t.Errorf("errors:\n%s\nwant field %q with reason containing %q", joinErrs(errs), tt.field, tt.reason)
		})
	}
}

func TestValidateLines(t *testing.T) {
	// An error points at the offending key; a missing field at its parent.
	data := withSpec("web", `  containers:
  - name: app
    image: busybox
  - name: side
    ports:
    - containerPort: 80
      protocol: ICMP
`)
	_, errs := parseDefault("/m/x.yaml", []byte(data), node)
	want := map[string]int{
		"spec.containers[1].image":             9, // missing: the item's line
		"spec.containers[1].ports[0].protocol": 12,
	}
	for _, e := range errs {
		if line, ok := want[e.Field]; ok {
			if e.Line != line {
				t.Errorf("%s at line %d, want %d", e.Field, e.Line, line)
			}
			delete(want, e.Field)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing errors for %v in:\n%s", want, joinErrs(errs))
	}
}

func TestHostnameTruncationWarning(t *testing.T) {
	name := strings.Repeat("a", 60)
	p := mustParse(t, "/m/x.yaml", withSpec(name, oneContainer))[0]
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "truncated to 63 characters") {
		t.Errorf("warnings %q, want a hostname truncation warning", p.Warnings)
	}
	p = mustParse(t, "/m/x.yaml", withSpec(name, oneContainer+"  hostname: short\n"))[0]
	if len(p.Warnings) != 0 {
		t.Errorf("warnings %q with spec.hostname set, want none", p.Warnings)
	}
}

// TestKubernetesValidation: Kubernetes' own validation runs (ValidatePodCreate,
// as kubelet's file source runs it), and each of its errors is one error at
// the line of its field.
func TestKubernetesValidation(t *testing.T) {
	tests := []struct {
		name, data, field, reason string
		line                      int
	}{
		{"hostPort differs from containerPort with hostNetwork", withSpec("web", "  hostNetwork: true\n"+oneContainer+"    ports:\n    - containerPort: 80\n      hostPort: 81\n"),
			"spec.containers[0].ports[0].hostPort", "Invalid value: 81: must match `containerPort` when `hostNetwork` is true", 12},
		{"allowPrivilegeEscalation false with privileged", withSpec("web", oneContainer+"    securityContext:\n      privileged: true\n      allowPrivilegeEscalation: false\n"),
			"spec.containers[0].securityContext", "Invalid value: cannot set `allowPrivilegeEscalation` to false and `privileged` to true", 9},
		{"allowPrivilegeEscalation false with CAP_SYS_ADMIN", withSpec("web", oneContainer+"    securityContext:\n      capabilities: {add: [CAP_SYS_ADMIN]}\n      allowPrivilegeEscalation: false\n"),
			"spec.containers[0].securityContext", "Invalid value: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN", 9},
		{"subPath of the second mount", withSpec("web", oneContainer+"    volumeMounts:\n    - {name: d, mountPath: /a}\n    - {name: d, mountPath: /x, subPath: ../etc}\n  volumes: [{name: d, emptyDir: {}}]\n"),
			"spec.containers[0].volumeMounts[1].subPath", `Invalid value: "../etc": must not contain '..'`, 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, errs := parseDefault("/m/x.yaml", []byte(tt.data), node)
			// CAP_SYS_ADMIN, the name Kubernetes' check looks for, is
			// also podvisor's own error (no CAP_ prefix): one more.
			errs = slices.DeleteFunc(errs, func(e *FileError) bool { return strings.Contains(e.Reason, "no CAP_ prefix") })
			if len(pods) != 0 || len(errs) != 1 {
				t.Fatalf("%d pods, errors:\n%s\nwant one error", len(pods), joinErrs(errs))
			}
			want := &FileError{Path: "/m/x.yaml", Line: tt.line, Field: tt.field, Reason: tt.reason}
			if got := errs[0]; got.Error() != want.Error() {
				t.Errorf("error\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestEmptyDirSizeLimit: a Memory emptyDir's sizeLimit sizes its tmpfs; a
// disk emptyDir's is accepted (eviction enforces it) within the bounds of
// a quantity.
func TestEmptyDirSizeLimit(t *testing.T) {
	vol := func(ed string) string {
		return withSpec("web", oneContainer+"  volumes:\n  - name: d\n    emptyDir: "+ed+"\n")
	}
	p := mustParse(t, "/m/x.yaml", vol("{medium: Memory, sizeLimit: 64Mi}"))[0]
	if got := p.Pod.Spec.Volumes[0].EmptyDir.SizeLimit.String(); got != "64Mi" {
		t.Errorf("Memory sizeLimit %s, want 64Mi", got)
	}
	mustParse(t, "/m/x.yaml", vol("{sizeLimit: 0}"))
	mustParse(t, "/m/x.yaml", vol("{sizeLimit: 1Gi}"))
	_, errs := parseDefault("/m/x.yaml", []byte(vol("{medium: \"\", sizeLimit: 9Pi}")), node)
	want := "/m/x.yaml:11: spec.volumes[0].emptyDir.sizeLimit: must be at most 8Pi, got 9Pi"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("errors:\n%s\nwant:\n%s", joinErrs(errs), want)
	}
}
