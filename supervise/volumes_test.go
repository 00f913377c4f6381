package supervise

import (
	"strings"
	"testing"

	"github.com/podvisor/podvisor/mounts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func i32(v int32) *int32 { return &v }

func TestVolumeFiles(t *testing.T) {
	tr := true
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-node", Namespace: "ns", UID: "u1",
			Labels: map[string]string{"app": "web", "tier": "front"}, Annotations: map[string]string{"note": "hi"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{
			Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}}}}},
	}
	objs := Objects{
		ConfigMaps: map[string]*v1.ConfigMap{"ns/conf": {Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"bin": {0, 1}}}},
		Secrets:    map[string]*v1.Secret{"ns/creds": {Data: map[string][]byte{"pw": []byte("s3")}}},
	}
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")}
	cmRef := func(name string) v1.LocalObjectReference { return v1.LocalObjectReference{Name: name} }

	tests := []struct {
		name    string
		vol     v1.VolumeSource
		want    mounts.Files
		wantErr string
	}{
		{"configMap whole, default mode", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("conf")}},
			mounts.Files{"a": {Data: []byte("1"), Mode: 0o644}, "b": {Data: []byte("2"), Mode: 0o644}, "bin": {Data: []byte{0, 1}, Mode: 0o644}}, ""},
		{"configMap items and modes", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("conf"), DefaultMode: i32(0o600),
			Items: []v1.KeyToPath{{Key: "a", Path: "x/a.txt", Mode: i32(0o400)}, {Key: "b", Path: "b"}}}},
			mounts.Files{"x/a.txt": {Data: []byte("1"), Mode: 0o400}, "b": {Data: []byte("2"), Mode: 0o600}}, ""},
		{"configMap missing", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("nope")}},
			nil, `configmap "nope" not found`},
		{"configMap missing optional", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("nope"), Optional: &tr,
			Items: []v1.KeyToPath{{Key: "a", Path: "a"}}}}, mounts.Files{}, ""},
		{"configMap missing key", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("conf"),
			Items: []v1.KeyToPath{{Key: "zz", Path: "a"}}}}, nil, "configmap references non-existent config key: zz"},
		{"configMap missing optional key", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("conf"), Optional: &tr,
			Items: []v1.KeyToPath{{Key: "zz", Path: "z"}, {Key: "a", Path: "a"}}}}, mounts.Files{"a": {Data: []byte("1"), Mode: 0o644}}, ""},
		{"secret decoded", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds", DefaultMode: i32(0o400)}},
			mounts.Files{"pw": {Data: []byte("s3"), Mode: 0o400}}, ""},
		{"secret missing", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "nope"}}, nil, `secret "nope" not found`},
		{"secret missing key", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds", Items: []v1.KeyToPath{{Key: "k", Path: "k"}}}},
			nil, "references non-existent secret key: k"},
		{"downward API", v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{DefaultMode: i32(0o644), Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "app", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}, Mode: i32(0o400)},
			{Path: "meta/name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			{Path: "uid", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}},
			{Path: "mem", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
			{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
		}}}, mounts.Files{
			"labels": {Data: []byte("app=\"web\"\ntier=\"front\""), Mode: 0o644}, "app": {Data: []byte("web"), Mode: 0o400},
			"meta/name": {Data: []byte("web-node"), Mode: 0o644}, "uid": {Data: []byte("u1"), Mode: 0o644},
			"mem": {Data: []byte("64"), Mode: 0o644}, "cpu": {Data: []byte("4000"), Mode: 0o644},
		}, ""},
		{"downward API unknown container", v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "x", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "other", Resource: "limits.cpu"}}}}}, nil, "container other not found"},
		{"projected merges in order", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: i32(0o440), Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: cmRef("conf"), Items: []v1.KeyToPath{{Key: "a", Path: "same"}, {Key: "b", Path: "b", Mode: i32(0o600)}}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: cmRef("creds")}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "same", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}, mounts.Files{"same": {Data: []byte("ns"), Mode: 0o440}, "b": {Data: []byte("2"), Mode: 0o600}, "pw": {Data: []byte("s3"), Mode: 0o440}}, ""},
		{"projected reports every source", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: cmRef("x")}},
			{Secret: &v1.SecretProjection{LocalObjectReference: cmRef("y")}},
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "t"}},
		}}}, nil, `[configmap "x" not found, secret "y" not found, projected source serviceAccountToken is not supported]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &v1.Volume{Name: "v", VolumeSource: tt.vol}
			got, err := volumeFiles(pod, v, objs, alloc)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				if msg := failedMount(v, err); !strings.HasPrefix(msg, `MountVolume.SetUp failed for volume "v" : `) {
					t.Errorf("FailedMount message %q", msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Errorf("files %v, want %v", got, tt.want)
			}
			for p, w := range tt.want {
				g, ok := got[p]
				if !ok || string(g.Data) != string(w.Data) || g.Mode != w.Mode {
					t.Errorf("%s = %q %#o (present %v), want %q %#o", p, g.Data, g.Mode, ok, w.Data, w.Mode)
				}
			}
		})
	}
}

// A pod whose volume needs a missing object waits before its sandbox,
// showing kubelet's FailedMount message; once its volumes are set up, a
// change of objects rewrites them without touching the containers.
func TestPlanMountWaitAndRefresh(t *testing.T) {
	basicInput := func() planInput {
		pod := testPod("p", v1.RestartPolicyAlways, nil, "a")
		rec := &podRecord{Init: map[string]*containerRecord{}, Apps: map[string]*containerRecord{}}
		rec.ensureContainers(pod)
		return planInput{Now: t0, Pod: pod, Rec: rec}
	}
	in := basicInput()
	in.MountWait = `MountVolume.SetUp failed for volume "v" : configmap "c" not found`
	p := planPod(in)
	if p.MountWait != in.MountWait || len(p.Actions) != 0 || !p.Wake.IsZero() {
		t.Errorf("mount wait: plan %+v", p)
	}

	in = basicInput()
	in.Rec = live(nil, nil)
	in.Rec.ensureContainers(in.Pod)
	in.Sandbox = readySandbox()
	in.VolumesStale = true
	p = planPod(in)
	if len(p.Actions) == 0 {
		t.Fatalf("stale volumes: no actions")
	}
	if _, ok := p.Actions[0].(refreshVolumes); !ok {
		t.Errorf("stale volumes: actions %v, want refresh volumes first", p.Actions)
	}
	in.VolumesRetryAt = in.Now.Add(errorRetry)
	p = planPod(in)
	for _, a := range p.Actions {
		if _, ok := a.(refreshVolumes); ok {
			t.Errorf("refresh planned before its retry time")
		}
	}
	if !p.Wake.Equal(in.VolumesRetryAt) && (p.Wake.IsZero() || p.Wake.After(in.VolumesRetryAt)) {
		t.Errorf("wake %v, want by %v", p.Wake, in.VolumesRetryAt)
	}
}
