package podfile

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestKubeadmManifests: the manifests kubeadm writes for a control plane
// are valid as they are, with no warnings, and their probes carry
// Kubernetes' defaults for supervise to read.
func TestKubeadmManifests(t *testing.T) {
	files, err := filepath.Glob("../testdata/kubeadm-v1.37.2/*.yaml") // shared with test/e2e
	if err != nil || len(files) != 4 {
		t.Fatalf("kubeadm manifests: %v %v", files, err)
	}
	pods := map[string]*v1.Pod{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ps, errs := parseDefault(f, data, "node1")
		for _, e := range errs {
			t.Errorf("%v", e)
		}
		if len(ps) != 1 {
			t.Fatalf("%s: %d pods", f, len(ps))
		}
		if len(ps[0].Warnings) > 0 {
			t.Errorf("%s: warnings %q", f, ps[0].Warnings)
		}
		pods[ps[0].Pod.Name] = ps[0].Pod
	}

	api := pods["kube-apiserver-node1"]
	if api == nil {
		t.Fatalf("no kube-apiserver pod in %v", pods)
	}
	c := api.Spec.Containers[0]
	live, ready := c.LivenessProbe, c.ReadinessProbe
	if h := live.HTTPGet; h == nil || h.Scheme != v1.URISchemeHTTPS || h.Host != "127.0.0.1" || h.Path != "/livez" || h.Port != intstr.FromString("probe-port") {
		t.Errorf("kube-apiserver livenessProbe.httpGet = %+v", live.HTTPGet)
	}
	if live.FailureThreshold != 8 || live.InitialDelaySeconds != 10 || live.TimeoutSeconds != 15 || live.SuccessThreshold != 1 {
		t.Errorf("kube-apiserver livenessProbe = %+v, want failureThreshold 8, initialDelaySeconds 10, timeoutSeconds 15, successThreshold 1 (defaulted)", live)
	}
	if ready.PeriodSeconds != 1 || ready.SuccessThreshold != 1 {
		t.Errorf("kube-apiserver readinessProbe = %+v", ready)
	}
	if sc := api.Spec.SecurityContext.SeccompProfile; sc == nil || sc.Type != v1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod seccompProfile = %+v, want RuntimeDefault", sc)
	}
}

// TestProbeDefaults: probes and hooks carry Kubernetes' defaults, so
// supervise reads the timing from the parsed spec.
func TestProbeDefaults(t *testing.T) {
	pod := mustParse(t, "/m/web.yaml", basePod+`    ports: [{name: http, containerPort: 8080}]
    livenessProbe:
      httpGet: {port: http}
    readinessProbe:
      tcpSocket: {port: 8080}
    lifecycle:
      preStop:
        httpGet: {port: 8080, path: /quit}
`)[0].Pod
	c := pod.Spec.Containers[0]
	for name, pr := range map[string]*v1.Probe{"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe} {
		if pr.TimeoutSeconds != 1 || pr.PeriodSeconds != 10 || pr.SuccessThreshold != 1 || pr.FailureThreshold != 3 || pr.InitialDelaySeconds != 0 {
			t.Errorf("%s = %+v, want timeoutSeconds 1, periodSeconds 10, successThreshold 1, failureThreshold 3", name, pr)
		}
	}
	if h := c.LivenessProbe.HTTPGet; h.Scheme != v1.URISchemeHTTP || h.Path != "/" {
		t.Errorf("livenessProbe.httpGet = %+v, want scheme HTTP and path /", h)
	}
	if h := c.Lifecycle.PreStop.HTTPGet; h.Scheme != v1.URISchemeHTTP || h.Path != "/quit" {
		t.Errorf("preStop.httpGet = %+v, want scheme HTTP and the path as given", h)
	}
}

// TestProbesAndHooksAccepted: every probe and lifecycle form podvisor
// implements is valid.
func TestProbesAndHooksAccepted(t *testing.T) {
	tests := []struct{ name, extra string }{
		{"exec liveness", "    livenessProbe: {exec: {command: [cat, /tmp/ok]}}\n"},
		{"httpGet readiness with everything", `    ports: [{name: web, containerPort: 8443}]
    readinessProbe:
      httpGet:
        scheme: HTTPS
        host: 127.0.0.1
        path: /healthz
        port: web
        httpHeaders: [{name: X-Probe, value: "1"}]
      initialDelaySeconds: 5
      timeoutSeconds: 2
      periodSeconds: 3
      successThreshold: 2
      failureThreshold: 4
`},
		{"httpGet by port number, protocol HTTP1", "    livenessProbe: {httpGet: {port: 8080, protocol: HTTP1}}\n"},
		{"tcpSocket", "    livenessProbe: {tcpSocket: {port: 2379, host: 127.0.0.1}}\n"},
		{"grpc with service", "    livenessProbe: {grpc: {port: 9000, service: health}}\n"},
		{"grpc plaintext", "    startupProbe: {grpc: {port: 9000, mode: Plaintext}}\n"},
		{"probe terminationGracePeriodSeconds", "    livenessProbe: {exec: {command: [x]}, terminationGracePeriodSeconds: 5}\n    startupProbe: {exec: {command: [x]}, terminationGracePeriodSeconds: 7}\n"},
		{"postStart exec, preStop sleep", "    lifecycle: {postStart: {exec: {command: [x]}}, preStop: {sleep: {seconds: 5}}}\n"},
		{"preStop httpGet", "    lifecycle: {preStop: {httpGet: {port: 8080, path: /quit}}}\n"},
		{"stopSignal", "    lifecycle: {stopSignal: SIGUSR1}\n  os: {name: linux}\n"},
		{"sidecar", "  initContainers:\n  - name: side\n    image: busybox\n    restartPolicy: Always\n    readinessProbe: {exec: {command: [x]}}\n    lifecycle: {preStop: {sleep: {seconds: 1}}}\n"},
		{"RestartAllContainers on a sidecar", "  initContainers:\n  - name: side\n    image: busybox\n    restartPolicy: Always\n    restartPolicyRules: [{action: RestartAllContainers, exitCodes: {operator: In, values: [88]}}]\n"},
		{"RestartAllContainers", "    restartPolicy: Never\n    restartPolicyRules: [{action: RestartAllContainers, exitCodes: {operator: NotIn, values: [0]}}]\n"},
		{"pod seccomp and AppArmor", "  securityContext: {seccompProfile: {type: RuntimeDefault}, appArmorProfile: {type: Unconfined}}\n"},
		{"pod AppArmor Localhost", "  securityContext: {appArmorProfile: {type: Localhost, localhostProfile: podvisor-test}}\n"},
		{"pod seccomp Localhost", "  securityContext: {seccompProfile: {type: Localhost, localhostProfile: profiles/x.json}}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "/m/web.yaml", basePod+tt.extra)[0]
			if len(p.Warnings) > 0 {
				t.Errorf("warnings %q", p.Warnings)
			}
		})
	}
}

// TestProbesAndHooksRejected: the forms podvisor does not run, and
// Kubernetes' own refusals, each one error at its line.
func TestProbesAndHooksRejected(t *testing.T) {
	tests := []struct {
		name, extra string
		want        string // the whole error
	}{
		{"tcpSocket lifecycle handler", "    lifecycle:\n      preStop:\n        tcpSocket: {port: 80}\n",
			"/m/x.yaml:11: spec.containers[0].lifecycle.preStop.tcpSocket: " + notSupported("Kubernetes does not support tcpSocket lifecycle handlers and kubelet never runs them; use exec, httpGet or sleep")},
		{"RestartAllContainers without the container's restartPolicy", "    restartPolicyRules: [{action: RestartAllContainers, exitCodes: {operator: In, values: [42]}}]\n",
			"/m/x.yaml:7: spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used"},
		{"RestartAllContainers without exitCodes", "    restartPolicy: Never\n    restartPolicyRules: [{action: RestartAllContainers}]\n",
			"/m/x.yaml:10: spec.containers[0].restartPolicyRules[0].exitCodes: Required value: must be specified"},
		{"probe port name that is no port", "    ports: [{name: web, containerPort: 80}]\n    livenessProbe:\n      httpGet: {port: wbe}\n",
			`/m/x.yaml:11: spec.containers[0].livenessProbe.httpGet.port: port "wbe" is not the name of one of this container's ports`},
		{"tcpSocket port name that is no port", "    readinessProbe:\n      tcpSocket: {port: web}\n",
			`/m/x.yaml:10: spec.containers[0].readinessProbe.tcpSocket.port: port "web" is not the name of one of this container's ports`},
		{"hook port name that is no port", "    lifecycle:\n      preStop:\n        httpGet: {port: web}\n",
			`/m/x.yaml:11: spec.containers[0].lifecycle.preStop.httpGet.port: port "web" is not the name of one of this container's ports`},
		{"HTTP2 probe", "    livenessProbe:\n      httpGet: {port: 80, protocol: HTTP2}\n",
			`/m/x.yaml:10: spec.containers[0].livenessProbe.httpGet.protocol: ` + notSupported(`"HTTP2"; HTTP1 only`)},
		{"pod seccomp Localhost without a profile", "  securityContext:\n    seccompProfile: {type: Localhost}\n",
			`/m/x.yaml:10: spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost`},
		{"probe on an init container", "  initContainers:\n  - name: init\n    image: busybox\n    livenessProbe: {exec: {command: [x]}}\n",
			"/m/x.yaml:12: spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"},
		{"two probe handlers", "    livenessProbe:\n      exec: {command: [x]}\n      tcpSocket: {port: 80}\n",
			"/m/x.yaml:11: spec.containers[0].livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"},
		{"readiness successThreshold is free, liveness is not", "    livenessProbe:\n      exec: {command: [x]}\n      successThreshold: 2\n",
			"/m/x.yaml:11: spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"},
		{"stopSignal without os", "    lifecycle:\n      stopSignal: SIGUSR1\n",
			"/m/x.yaml:10: spec.containers[0].lifecycle.stopSignal: Forbidden: may not be set for containers with empty `spec.os.name`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, errs := parseDefault("/m/x.yaml", []byte(basePod+tt.extra), node)
			if len(pods) != 0 || len(errs) != 1 || errs[0].Error() != tt.want {
				t.Errorf("%d pods, errors:\n%s\nwant:\n%s", len(pods), joinErrs(errs), tt.want)
			}
		})
	}
}
