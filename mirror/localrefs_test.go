package mirror

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	corev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/utils/ptr"

	"github.com/podvisor/podvisor/status"
)

// nodeRestrictionRefusal is what NodeRestriction (and the ServiceAccount
// admission plugin) says of a mirror pod: the API object it references,
// "" when it takes it (k8s.io/kubernetes plugin/pkg/admission/
// noderestriction admitPodCreate).
func nodeRestrictionRefusal(t *testing.T, pod *v1.Pod) string {
	t.Helper()
	var in core.Pod
	if err := corev1.Convert_v1_Pod_To_core_Pod(pod, &in, nil); err != nil {
		t.Fatal(err)
	}
	refs, resource, err := podutil.HasAPIObjectReference(&in)
	if err != nil {
		t.Fatal(err)
	}
	if refs {
		return resource
	}
	return ""
}

// validationErrors are the apiserver's validation errors of pod, defaulted
// as the apiserver defaults it.
func validationErrors(t *testing.T, pod *v1.Pod) []string {
	t.Helper()
	p := pod.DeepCopy()
	corev1.SetObjectDefaults_Pod(p)
	var in core.Pod
	if err := corev1.Convert_v1_Pod_To_core_Pod(p, &in, nil); err != nil {
		t.Fatal(err)
	}
	opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&in.Spec, nil, &in.ObjectMeta, nil)
	var out []string
	for _, e := range corevalidation.ValidatePodCreate(&in, opts) {
		out = append(out, e.Error())
	}
	return out
}

// secretValues would be the values of the local Secrets and ConfigMaps the
// test pods read. They are never an input of the mirror (the local pod's
// spec holds references only): searching for them guards against a change
// that makes them one, such as resolved env in the Store's pod. The proof
// that none reaches a real apiserver is test/e2e TestMirrorLocalObjects.
var secretValues = []string{"s3cr3t-pa55w0rd", "c0nf1g-v4lu3", "dockercfg-t0k3n"}

// withLocalObjects is a local pod that reads local objects in every way a
// pod can.
func withLocalObjects() *v1.Pod {
	p := localPod("app", "a1b2", v1.PodRunning)
	p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "regcred"}}
	p.Spec.Volumes = []v1.Volume{
		{Name: "conf", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "app-config"},
			Items:                []v1.KeyToPath{{Key: "app.ini", Path: "app.ini"}},
		}}},
		{Name: "tls", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "app-tls", DefaultMode: ptr.To[int32](0o400)}}},
		{Name: "bundle", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "app-config"}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "db"}, Optional: ptr.To(true)}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
		}}}},
		{Name: "podinfo", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		}}}},
		{Name: "info2", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/log"}}},
	}
	p.Spec.InitContainers = []v1.Container{{
		Name: "init", Image: "busybox",
		EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "app-config"}}}},
		Env: []v1.EnvVar{{Name: "DB_PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "db"}, Key: "password"}}}},
	}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
		{Name: "conf", MountPath: "/etc/app"},
		{Name: "tls", MountPath: "/etc/tls", ReadOnly: true},
		{Name: "bundle", MountPath: "/etc/bundle"},
		{Name: "podinfo", MountPath: "/etc/podinfo"},
		{Name: "conf", MountPath: "/etc/app.ini", SubPath: "app.ini"},
	}
	p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{
		{Prefix: "DB_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "db"}}},
		{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
	}
	p.Spec.Containers[0].Env = []v1.EnvVar{
		{Name: "LITERAL", Value: "plain"},
		{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "db"}, Key: "password"}}},
		{Name: "LEVEL", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "app-config"}, Key: "level", Optional: ptr.To(true)}}},
		{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory"}}},
		{Name: "EXPANDED", Value: "$(PASSWORD)@$(LEVEL)"},
	}
	// The status as the supervisor gives it: a container that waited for
	// a Secret, with kubelet's message.
	p.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "init", State: v1.ContainerState{
		Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}
	p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", LastTerminationState: v1.ContainerState{
		Waiting: &v1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `secret "db" not found`}}}}
	return p
}

// The mirror of a pod that reads local objects names none (NodeRestriction
// and the apiserver's validation take it), lists each reference by name
// and key in its annotation, keeps what NodeRestriction allows, and holds
// no value of any object.
func TestMirrorSpecLocalReferences(t *testing.T) {
	local := withLocalObjects()
	before := local.DeepCopy()
	if r := nodeRestrictionRefusal(t, local); r == "" {
		t.Fatal("NodeRestriction would take the local pod as it is: the test pod references nothing")
	}
	m := (&Mirror{opts: Options{NodeName: testNode}}).mirrorPod(local, "node-uid")
	if !reflect.DeepEqual(local, before) {
		t.Error("mirrorPod changed the local pod")
	}
	if r := nodeRestrictionRefusal(t, m); r != "" {
		t.Errorf("NodeRestriction refuses the mirror: it references %s", r)
	}
	if errs := validationErrors(t, m); len(errs) > 0 {
		t.Errorf("the apiserver refuses the mirror: %q", errs)
	}

	var refs []LocalReference
	if err := json.Unmarshal([]byte(m.Annotations[LocalReferencesAnnotation]), &refs); err != nil {
		t.Fatalf("annotation %s = %q: %v", LocalReferencesAnnotation, m.Annotations[LocalReferencesAnnotation], err)
	}
	want := []LocalReference{
		{Field: "spec.volumes[0].configMap", Kind: "ConfigMap", Name: "app-config"},
		{Field: "spec.volumes[1].secret", Kind: "Secret", Name: "app-tls"},
		{Field: "spec.volumes[2].projected.sources[0].configMap", Kind: "ConfigMap", Name: "app-config"},
		{Field: "spec.volumes[2].projected.sources[1].secret", Kind: "Secret", Name: "db"},
		{Field: "spec.initContainers[0].envFrom[0].configMapRef", Kind: "ConfigMap", Name: "app-config"},
		{Field: "spec.initContainers[0].env[0].valueFrom.secretKeyRef", Kind: "Secret", Name: "db", Key: "password"},
		{Field: "spec.containers[0].envFrom[0].secretRef", Kind: "Secret", Name: "db"},
		{Field: "spec.containers[0].envFrom[1].configMapRef", Kind: "ConfigMap", Name: "absent"},
		{Field: "spec.containers[0].env[1].valueFrom.secretKeyRef", Kind: "Secret", Name: "db", Key: "password"},
		{Field: "spec.containers[0].env[2].valueFrom.configMapKeyRef", Kind: "ConfigMap", Name: "app-config", Key: "level"},
		{Field: "spec.imagePullSecrets[0]", Kind: "Secret", Name: "regcred"},
	}
	if !slices.Equal(refs, want) {
		t.Errorf("local references:\n got %+v\nwant %+v", refs, want)
	}

	// Volumes: the local ones as emptyDir, the others as they are.
	for i, v := range m.Spec.Volumes {
		lv := local.Spec.Volumes[i]
		if v.Name != lv.Name {
			t.Errorf("volume %d is %q, want %q", i, v.Name, lv.Name)
		}
		switch v.Name {
		case "conf", "tls", "bundle":
			if !reflect.DeepEqual(v.VolumeSource, v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}) {
				t.Errorf("volume %s = %+v, want emptyDir: {}", v.Name, v.VolumeSource)
			}
		default:
			if !reflect.DeepEqual(v, lv) {
				t.Errorf("volume %s = %+v, want it as the local pod has it", v.Name, v)
			}
		}
	}
	c := m.Spec.Containers[0]
	if !reflect.DeepEqual(c.VolumeMounts, local.Spec.Containers[0].VolumeMounts) {
		t.Errorf("mounts %+v, want the local ones", c.VolumeMounts)
	}
	if c.EnvFrom != nil || m.Spec.InitContainers[0].EnvFrom != nil || m.Spec.ImagePullSecrets != nil {
		t.Errorf("envFrom %+v, init envFrom %+v, imagePullSecrets %+v: want none", c.EnvFrom, m.Spec.InitContainers[0].EnvFrom, m.Spec.ImagePullSecrets)
	}
	wantEnv := []v1.EnvVar{
		{Name: "LITERAL", Value: "plain"},
		{Name: "PASSWORD"},
		{Name: "LEVEL"},
		local.Spec.Containers[0].Env[3], // fieldRef
		local.Spec.Containers[0].Env[4], // resourceFieldRef
		{Name: "EXPANDED", Value: "$(PASSWORD)@$(LEVEL)"},
	}
	if !reflect.DeepEqual(c.Env, wantEnv) {
		t.Errorf("env %+v, want %+v", c.Env, wantEnv)
	}
	if e := m.Spec.InitContainers[0].Env; !reflect.DeepEqual(e, []v1.EnvVar{{Name: "DB_PASSWORD"}}) {
		t.Errorf("init env %+v, want DB_PASSWORD with no value", e)
	}

	// Nothing of any object's values: the search finds what is there (the
	// objects' names), so it would find a value too.
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"app-config", "app-tls", `\"db\"`, "regcred", "password"} {
		if !bytes.Contains(data, []byte(name)) {
			t.Errorf("the mirror does not name %s: the search for values below proves nothing", name)
		}
	}
	for _, v := range secretValues {
		if bytes.Contains(data, []byte(v)) {
			t.Errorf("the mirror holds the value %q:\n%s", v, data)
		}
	}
}

// Every kind of reference, one at a time: the mirror names no API object,
// passes validation, and lists that one reference.
func TestMirrorSpecEachReference(t *testing.T) {
	cmRef := v1.LocalObjectReference{Name: "cm"}
	secRef := v1.LocalObjectReference{Name: "sec"}
	volume := func(src v1.VolumeSource) func(*v1.PodSpec) {
		return func(s *v1.PodSpec) {
			s.Volumes = []v1.Volume{{Name: "v", VolumeSource: src}}
			s.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "v", MountPath: "/v"}}
		}
	}
	env := func(src v1.EnvVarSource) func(*v1.PodSpec) {
		return func(s *v1.PodSpec) { s.Containers[0].Env = []v1.EnvVar{{Name: "E", ValueFrom: &src}} }
	}
	for _, tc := range []struct {
		name string
		edit func(*v1.PodSpec)
		want []LocalReference // nil: the spec is mirrored unchanged
	}{
		{"configMap volume", volume(v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: cmRef}}),
			[]LocalReference{{Field: "spec.volumes[0].configMap", Kind: "ConfigMap", Name: "cm"}}},
		{"secret volume", volume(v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec", Optional: ptr.To(true)}}),
			[]LocalReference{{Field: "spec.volumes[0].secret", Kind: "Secret", Name: "sec"}}},
		{"persistentVolumeClaim volume", volume(v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: true}}),
			[]LocalReference{{Field: "spec.volumes[0].persistentVolumeClaim", Kind: "PersistentVolumeClaim", Name: "data"}}},
		{"persistentVolumeClaim device", func(s *v1.PodSpec) {
			s.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "disk"}}}}
			s.Containers[0].VolumeDevices = []v1.VolumeDevice{{Name: "v", DevicePath: "/dev/xvda"}}
		}, []LocalReference{{Field: "spec.volumes[0].persistentVolumeClaim", Kind: "PersistentVolumeClaim", Name: "disk"}}},
		{"projected configMap", volume(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: cmRef}}}}}),
			[]LocalReference{{Field: "spec.volumes[0].projected.sources[0].configMap", Kind: "ConfigMap", Name: "cm"}}},
		{"projected secret", volume(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{Secret: &v1.SecretProjection{LocalObjectReference: secRef}}}}}),
			[]LocalReference{{Field: "spec.volumes[0].projected.sources[0].secret", Kind: "Secret", Name: "sec"}}},
		{"projected serviceAccountToken", volume(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}),
			[]LocalReference{{Field: "spec.volumes[0].projected.sources[0].serviceAccountToken", Kind: "ServiceAccount"}}},
		{"projected clusterTrustBundle", volume(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("ctb"), Path: "ca.crt"}}}}}),
			[]LocalReference{{Field: "spec.volumes[0].projected.sources[0].clusterTrustBundle", Kind: "ClusterTrustBundle", Name: "ctb"}}},
		{"projected downwardAPI", volume(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{DownwardAPI: &v1.DownwardAPIProjection{
			Items: []v1.DownwardAPIVolumeFile{{Path: "n", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}}}), nil},
		{"downwardAPI volume", volume(v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
			Items: []v1.DownwardAPIVolumeFile{{Path: "n", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}), nil},
		{"emptyDir volume", volume(v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}), nil},
		{"configMapKeyRef", env(v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: cmRef, Key: "k"}}),
			[]LocalReference{{Field: "spec.containers[0].env[0].valueFrom.configMapKeyRef", Kind: "ConfigMap", Name: "cm", Key: "k"}}},
		{"secretKeyRef", env(v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: secRef, Key: "k"}}),
			[]LocalReference{{Field: "spec.containers[0].env[0].valueFrom.secretKeyRef", Kind: "Secret", Name: "sec", Key: "k"}}},
		{"fieldRef", env(v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}), nil},
		{"resourceFieldRef", env(v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}), nil},
		{"envFrom configMapRef", func(s *v1.PodSpec) {
			s.Containers[0].EnvFrom = []v1.EnvFromSource{{Prefix: "P_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: cmRef}}}
		}, []LocalReference{{Field: "spec.containers[0].envFrom[0].configMapRef", Kind: "ConfigMap", Name: "cm"}}},
		{"envFrom secretRef", func(s *v1.PodSpec) {
			s.Containers[0].EnvFrom = []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: secRef}}}
		}, []LocalReference{{Field: "spec.containers[0].envFrom[0].secretRef", Kind: "Secret", Name: "sec"}}},
		{"init container secretKeyRef", func(s *v1.PodSpec) {
			s.InitContainers = []v1.Container{{Name: "i", Image: "busybox", Env: []v1.EnvVar{{Name: "E", ValueFrom: &v1.EnvVarSource{
				SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: secRef, Key: "k"}}}}}}
		}, []LocalReference{{Field: "spec.initContainers[0].env[0].valueFrom.secretKeyRef", Kind: "Secret", Name: "sec", Key: "k"}}},
		{"sidecar envFrom", func(s *v1.PodSpec) {
			s.InitContainers = []v1.Container{{Name: "side", Image: "busybox", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways),
				EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: secRef}}}}}
		}, []LocalReference{{Field: "spec.initContainers[0].envFrom[0].secretRef", Kind: "Secret", Name: "sec"}}},
		{"imagePullSecrets", func(s *v1.PodSpec) { s.ImagePullSecrets = []v1.LocalObjectReference{secRef, {Name: "other"}} },
			[]LocalReference{{Field: "spec.imagePullSecrets[0]", Kind: "Secret", Name: "sec"}, {Field: "spec.imagePullSecrets[1]", Kind: "Secret", Name: "other"}}},
		{"serviceAccountName", func(s *v1.PodSpec) { s.ServiceAccountName = "sa" },
			[]LocalReference{{Field: "spec.serviceAccountName", Kind: "ServiceAccount", Name: "sa"}}},
		{"serviceAccountName with its alias and automount", func(s *v1.PodSpec) {
			s.ServiceAccountName, s.DeprecatedServiceAccount, s.AutomountServiceAccountToken = "sa", "sa", ptr.To(true)
		}, []LocalReference{{Field: "spec.serviceAccountName", Kind: "ServiceAccount", Name: "sa"}}},
		{"automountServiceAccountToken alone", func(s *v1.PodSpec) { s.AutomountServiceAccountToken = ptr.To(false) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			local := localPod("p", "u1", v1.PodRunning)
			tc.edit(&local.Spec)
			if tc.want != nil && nodeRestrictionRefusal(t, local) == "" {
				t.Fatal("NodeRestriction takes the local pod: the case tests nothing")
			}
			m := (&Mirror{opts: Options{NodeName: testNode}}).mirrorPod(local, "node-uid")
			if r := nodeRestrictionRefusal(t, m); r != "" {
				t.Errorf("NodeRestriction refuses the mirror: it references %s", r)
			}
			if errs := validationErrors(t, m); len(errs) > 0 {
				t.Errorf("the apiserver refuses the mirror: %q", errs)
			}
			a, ok := m.Annotations[LocalReferencesAnnotation]
			if tc.want == nil {
				if ok {
					t.Errorf("annotation %s = %q on a pod without local references", LocalReferencesAnnotation, a)
				}
				if !reflect.DeepEqual(m.Spec, local.Spec) {
					t.Errorf("spec changed:\n got %+v\nwant %+v", m.Spec, local.Spec)
				}
				return
			}
			var got []LocalReference
			if err := json.Unmarshal([]byte(a), &got); err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("annotation %s = %s (%v), want %+v", LocalReferencesAnnotation, a, err, tc.want)
			}
			// A service account goes with its token's automount.
			if s := m.Spec; s.ServiceAccountName != "" || s.DeprecatedServiceAccount != "" || s.AutomountServiceAccountToken != nil {
				t.Errorf("mirror serviceAccountName %q, serviceAccount %q, automountServiceAccountToken set %t; want none",
					s.ServiceAccountName, s.DeprecatedServiceAccount, s.AutomountServiceAccountToken != nil)
			}
		})
	}
}

// A local pod's own podvisor.io/local-references annotation is not taken
// for podvisor's.
func TestMirrorLocalReferencesAnnotationIsPodvisors(t *testing.T) {
	local := localPod("p", "u1", v1.PodRunning)
	local.Annotations[LocalReferencesAnnotation] = `[{"field":"made up"}]`
	m := (&Mirror{opts: Options{NodeName: testNode}}).mirrorPod(local, "node-uid")
	if a, ok := m.Annotations[LocalReferencesAnnotation]; ok {
		t.Errorf("annotation %s = %q, want none: the pod references nothing", LocalReferencesAnnotation, a)
	}
}

// Under a fake NodeRestriction the mirror of a pod that reads local
// objects is created once and gets its status; resyncs and status changes
// never replace it (its spec differs from the local pod's by design). The
// events and status podvisor sends hold names and keys, no value.
func TestMirrorWithLocalReferencesAdmitted(t *testing.T) {
	f := newFixture(t)
	refused := 0
	f.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*v1.Pod)
		if r := nodeRestrictionRefusal(t, pod); r != "" {
			refused++
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod.Name,
				fmt.Errorf("node %q can not create pods that reference %s", testNode, r))
		}
		return false, nil, nil
	})
	local := withLocalObjects()
	f.store.SetPod(local)
	f.run()
	var m *v1.Pod
	eventually(t, "the mirror with its status", func() bool {
		m = f.pod(ns, "app-node1")
		return m != nil && m.Status.Phase == v1.PodRunning
	})
	f.m.Record(status.Event{Pod: local, Type: v1.EventTypeWarning, Reason: "Failed", Message: `Error: secret "db" not found`, FieldPath: "spec.containers{c}"})
	f.m.Record(status.Event{Pod: local, Type: v1.EventTypeWarning, Reason: "InvalidEnvironmentVariableNames",
		Message: "Keys [DB_1x] from the EnvFrom secret default/db were skipped since they are considered invalid environment variable names."})
	eventually(t, "the events", func() bool {
		return len(f.podEvents("Failed")) == 1 && len(f.podEvents("InvalidEnvironmentVariableNames")) == 1
	})

	// A status change, then resyncs: the mirror stays.
	changed := local.DeepCopy()
	changed.Status.ContainerStatuses[0].RestartCount = 1
	f.store.SetPod(changed)
	eventually(t, "the new status", func() bool { return f.pod(ns, "app-node1").Status.ContainerStatuses[0].RestartCount == 1 })
	for range 2 {
		f.settle(idle)
		f.clk.Step(podResyncPeriod)
		eventually(t, "a relist", func() bool { return len(f.actions("list", "pods", "")) > 0 })
	}
	f.settle(idle)
	if refused > 0 {
		t.Errorf("NodeRestriction refused the mirror %d times", refused)
	}
	if n, d := len(f.actions("create", "pods", "")), len(f.actions("delete", "pods", "")); n != 1 || d != 0 {
		t.Errorf("%d mirror creations and %d deletions, want 1 and 0", n, d)
	}
	if cur := f.pod(ns, "app-node1"); cur.UID != m.UID {
		t.Errorf("mirror %s replaced by %s", m.UID, cur.UID)
	}

	// Everything the fake apiserver holds: names and keys, no value.
	var all bytes.Buffer
	for _, list := range []func() (any, error){
		func() (any, error) { return f.cs.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{}) },
		func() (any, error) { return f.cs.CoreV1().Events("").List(t.Context(), metav1.ListOptions{}) },
		func() (any, error) { return f.cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{}) },
	} {
		objs, err := list()
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(objs)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(data)
	}
	for _, name := range []string{`secret \"db\" not found`, "EnvFrom secret default/db", "regcred"} {
		if !bytes.Contains(all.Bytes(), []byte(name)) {
			t.Errorf("the apiserver lacks %q: the search for values below proves nothing", name)
		}
	}
	for _, v := range secretValues {
		if bytes.Contains(all.Bytes(), []byte(v)) {
			t.Errorf("the apiserver holds the value %q", v)
		}
	}
}
