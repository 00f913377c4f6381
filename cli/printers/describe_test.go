package printers

import (
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPrintDescribe(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	started := metav1.NewTime(now.Add(-time.Minute))
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-n1", Namespace: "default", UID: "u1", Annotations: map[string]string{
			status.ManifestPathAnnotation:  "/etc/kubernetes/manifests/web.yaml",
			status.ManifestErrorAnnotation: "web.yaml:7: spec.containers[0].image: Required value",
		}},
		Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{
			Name: "httpd", Image: "busybox", Command: []string{"httpd", "-f"},
			Resources:    v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}},
			VolumeMounts: []v1.VolumeMount{{Name: "www", MountPath: "/www", ReadOnly: true}},
		}}, Volumes: []v1.Volume{{Name: "www", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0.2", PodIPs: []v1.PodIP{{IP: "10.88.0.2"}}, HostIP: "192.0.2.2",
			QOSClass: v1.PodQOSBurstable, StartTime: &started,
			ContainerStatuses: []v1.ContainerStatus{{
				Name: "httpd", ContainerID: "containerd://abc", Image: "docker.io/library/busybox:latest", RestartCount: 1, Ready: true,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					ExitCode: 137, Reason: "Error", StartedAt: started, FinishedAt: started}},
			}}},
	}
	events := []v1.Event{
		{InvolvedObject: v1.ObjectReference{Name: "web-n1", UID: "u1"}, Type: "Normal", Reason: "Started", Message: "Started container httpd",
			Count: 2, FirstTimestamp: metav1.NewTime(now.Add(-2 * time.Minute)), LastTimestamp: started, Source: v1.EventSource{Component: "podvisor"}},
		{InvolvedObject: v1.ObjectReference{Name: "other", UID: "u2"}, Type: "Normal", Reason: "Started", Message: "not mine"},
	}
	var b strings.Builder
	if err := PrintDescribe(&b, pod, events, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Name:", "web-n1",
		"Node:", "n1/192.0.2.2",
		"Manifest:", "/etc/kubernetes/manifests/web.yaml",
		"Manifest Error:", "Required value (running the last good version)",
		"Container ID:", "containerd://abc",
		"State:", "Running",
		"Last State:", "Terminated",
		"Exit Code:", "137",
		"Restart Count:", "1",
		"memory:", "64Mi",
		"/www from www (ro)",
		"EmptyDir",
		"QoS Class:", "Burstable",
		"Started container httpd",
		"(x2 over 2m)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not mine") {
		t.Errorf("describe shows another pod's event:\n%s", out)
	}
}

// Each probe is shown as kubectl shows it, with its last result beside it;
// the results annotation itself is not printed among the annotations.
func TestPrintDescribeProbes(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	svc := "etcd"
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-n1", Namespace: "kube-system", Annotations: map[string]string{
			status.ProbeResultsAnnotation: `{"etcd":{"liveness":{"result":"Failure","message":"HTTP probe failed with statuscode: 500","time":"2026-11-30T11:59:50Z"}}}`,
		}},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "etcd", Image: "etcd",
			LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Host: "127.0.0.1", Path: "/livez", Port: intstr.FromInt32(2381), Scheme: v1.URISchemeHTTP}},
				InitialDelaySeconds: 10, TimeoutSeconds: 15, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 8},
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/ok"}}}, TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
			StartupProbe:   &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 2379, Service: &svc}}, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 24},
		}}},
	}
	var b strings.Builder
	if err := PrintDescribe(&b, pod, nil, now); err != nil {
		t.Fatal(err)
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"Liveness: http-get http://127.0.0.1:2381/livez delay=10s timeout=15s period=10s #success=1 #failure=8",
		"Last Result: Failure 10s ago: HTTP probe failed with statuscode: 500",
		"Readiness: exec [cat /ok] delay=0s timeout=1s period=1s #success=1 #failure=3",
		"Startup: grpc <pod>:2379 etcd delay=0s timeout=1s period=10s #success=1 #failure=24",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, status.ProbeResultsAnnotation) {
		t.Errorf("the results annotation is printed:\n%s", out)
	}
}

// TestPrintDescribeEnv: env from ConfigMaps and Secrets is named as kubectl
// names it, never shown; fieldRefs and resourceFieldRefs are resolved.
func TestPrintDescribeEnv(t *testing.T) {
	yes := true
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-n1", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{
			Name: "app", Image: "busybox",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}},
			EnvFrom: []v1.EnvFromSource{
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "conf"}}},
				{Prefix: "DB_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Optional: &yes}},
			},
			Env: []v1.EnvVar{
				{Name: "PLAIN", Value: "v"},
				{Name: "NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
				{Name: "CPU", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
				{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory"}}},
				{Name: "PASS", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
				{Name: "URL", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "conf"}, Key: "url"}}},
			},
		}}},
		Status: v1.PodStatus{PodIP: "10.88.0.2"},
	}
	var b strings.Builder
	if err := PrintDescribe(&b, pod, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Environment Variables from:",
		"conf   ConfigMap                 Optional: false",
		"creds  Secret with prefix 'DB_'  Optional: true",
		"PLAIN:  v",
		"NAME:   web-n1 (v1:metadata.name)",
		"IP:     10.88.0.2 (v1:status.podIP)",
		"CPU:    250 (requests.cpu)",
		"MEM:    node allocatable (limits.memory)",
		"PASS:   <set to the key 'password' in secret 'creds'>  Optional: false",
		"URL:    <set to the key 'url' of config map 'conf'>    Optional: false",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
}

// TestDescribeObjectVolumes: configMap, secret, downwardAPI and projected
// volumes print as kubectl describe pod prints them.
func TestDescribeObjectVolumes(t *testing.T) {
	yes := true
	exp := int64(600)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-n1", Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}, Volumes: []v1.Volume{
			{Name: "conf", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app-conf"},
				Items: []v1.KeyToPath{{Key: "a", Path: "x/a"}}}}},
			{Name: "certs", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "tls", Optional: &yes}}},
			{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "mem", ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory"}},
			}}}},
			{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "app-conf"}}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "tls"}, Optional: &yes}},
				{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{ExpirationSeconds: &exp}},
			}}}},
		}},
	}
	var b strings.Builder
	if err := PrintDescribe(&b, pod, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	want := `Volumes:
  conf:
    Type:      ConfigMap (a volume populated by a ConfigMap)
    Name:      app-conf
    Optional:  false
    Items:
      a -> x/a
  certs:
    Type:        Secret (a volume populated by a Secret)
    SecretName:  tls
    Optional:    true
  info:
    Type:  DownwardAPI (a volume populated by information about the pod)
    Items:
      metadata.labels -> labels
      limits.memory -> mem
  all:
    Type:                Projected (a volume that contains injected data from multiple sources)
    ConfigMapName:       app-conf
    ConfigMapOptional:   <nil>
    SecretName:          tls
    SecretOptionalName:  true
    DownwardAPI:         true
      metadata.name -> name
    TokenExpirationSeconds:  600
QoS Class:`
	if !strings.Contains(out, want) {
		t.Errorf("volumes:\n%s\nwant:\n%s", out, want)
	}
}
