package supervise

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeDevices is a node whose CDI specs define the given devices.
type fakeDevices []string

func (f fakeDevices) lookup() deviceLookup {
	return deviceLookup{
		devices: func(kind string) []string {
			var out []string
			for _, d := range f {
				if k, n, _ := strings.Cut(d, "="); k == kind && n != "all" {
					out = append(out, d)
				}
			}
			return out
		},
		has: func(d string) bool { return slices.Contains(f, d) },
	}
}

func (f fakeDevices) Devices(kind string) []string { return f.lookup().devices(kind) }
func (f fakeDevices) Has(d string) bool            { return f.lookup().has(d) }
func (f fakeDevices) Dirs() []string               { return []string{"/etc/cdi", "/var/run/cdi"} }

func gpuCtr(name string, n int64, sidecar bool) v1.Container {
	c := v1.Container{Name: name}
	if n > 0 {
		q := *resource.NewQuantity(n, resource.DecimalSI)
		c.Resources.Limits = v1.ResourceList{"nvidia.com/gpu": q}
		c.Resources.Requests = v1.ResourceList{"nvidia.com/gpu": q}
	}
	if sidecar {
		always := v1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	return c
}

func TestAllocateDevices(t *testing.T) {
	gpus := fakeDevices{"nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=2", "nvidia.com/gpu=all", "example.com/dev=a"}
	for _, tc := range []struct {
		name   string
		pod    v1.Pod
		others map[string]types.UID
		want   map[string][]string
		reason string
		msg    string
	}{
		{
			name: "one device, lowest first, never all",
			pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{gpuCtr("a", 1, false)}}},
			want: map[string][]string{"a": {"nvidia.com/gpu=0"}},
		},
		{
			name:   "devices others hold are skipped",
			pod:    v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{gpuCtr("a", 1, false), gpuCtr("b", 1, false)}}},
			others: map[string]types.UID{"nvidia.com/gpu=0": "x"},
			want:   map[string][]string{"a": {"nvidia.com/gpu=1"}, "b": {"nvidia.com/gpu=2"}},
		},
		{
			name:   "too few free: kubelet's OutOf rejection",
			pod:    v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{gpuCtr("a", 2, false)}}},
			others: map[string]types.UID{"nvidia.com/gpu=0": "x", "nvidia.com/gpu=2": "y"},
			reason: "OutOfnvidia.com/gpu",
			msg:    "Node didn't have enough resource: nvidia.com/gpu, requested: 2, used: 2, capacity: 3 (CDI devices of kind nvidia.com/gpu in /etc/cdi, /var/run/cdi)",
		},
		{
			name:   "another pod holding all leaves nothing",
			pod:    v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{gpuCtr("a", 1, false)}}},
			others: map[string]types.UID{"nvidia.com/gpu=all": "x"},
			reason: "OutOfnvidia.com/gpu",
			msg:    "requested: 1, used: 3, capacity: 3",
		},
		{
			name: "no such kind on the node",
			pod: v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{
				Limits: v1.ResourceList{"vendor.io/fpga": resource.MustParse("1")}}}}}},
			reason: "OutOfvendor.io/fpga",
			msg:    "Node didn't have enough resource: vendor.io/fpga, requested: 1, used: 0, capacity: 0 (no CDI spec in /etc/cdi, /var/run/cdi defines devices of kind vendor.io/fpga)",
		},
		{
			name: "init containers' devices are given again; sidecars add up",
			pod: v1.Pod{Spec: v1.PodSpec{
				InitContainers: []v1.Container{gpuCtr("init", 2, false), gpuCtr("side", 1, true)},
				Containers:     []v1.Container{gpuCtr("a", 2, false)},
			}},
			want: map[string][]string{
				"init": {"nvidia.com/gpu=0", "nvidia.com/gpu=1"},
				"side": {"nvidia.com/gpu=0"},
				"a":    {"nvidia.com/gpu=1", "nvidia.com/gpu=2"},
			},
		},
		{
			name: "pod request is kubelet's: sidecar plus app over a node of 3",
			pod: v1.Pod{Spec: v1.PodSpec{
				InitContainers: []v1.Container{gpuCtr("side", 2, true)},
				Containers:     []v1.Container{gpuCtr("a", 2, false)},
			}},
			reason: "OutOfnvidia.com/gpu",
			msg:    "requested: 4, used: 0, capacity: 3",
		},
		{
			name: "annotation devices go to every container",
			pod: v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"cdi.k8s.io/x": "example.com/dev=a"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{gpuCtr("a", 1, false), gpuCtr("b", 0, false)}},
			},
			want: map[string][]string{"a": {"example.com/dev=a", "nvidia.com/gpu=0"}, "b": {"example.com/dev=a"}},
		},
		{
			name: "annotation naming a device others hold",
			pod: v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"cdi.k8s.io/x": "nvidia.com/gpu=1"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{gpuCtr("a", 0, false)}},
			},
			others: map[string]types.UID{"nvidia.com/gpu=1": "uid-x"},
			reason: ReasonUnexpectedAdmissionError,
			msg:    "Allocate failed due to device nvidia.com/gpu=1 named by annotation cdi.k8s.io/x: pod uid-x holds it, which is unexpected",
		},
		{
			name: "annotation naming all while another pod holds one",
			pod: v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"cdi.k8s.io/x": "nvidia.com/gpu=all"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{gpuCtr("a", 0, false)}},
			},
			others: map[string]types.UID{"nvidia.com/gpu=1": "uid-x"},
			reason: ReasonUnexpectedAdmissionError,
			msg:    "another pod holds devices of nvidia.com/gpu",
		},
		{
			name: "annotation naming an unknown device",
			pod: v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"cdi.k8s.io/x": "example.com/dev=zz"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{gpuCtr("a", 0, false)}},
			},
			reason: ReasonUnexpectedAdmissionError,
			msg:    "no CDI spec in /etc/cdi, /var/run/cdi defines it",
		},
		{
			name: "annotated device is not counted again for the resource",
			pod: v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"cdi.k8s.io/x": "nvidia.com/gpu=0"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{gpuCtr("a", 1, false)}},
			},
			want: map[string][]string{"a": {"nvidia.com/gpu=0", "nvidia.com/gpu=1"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, rej := allocateDevices(&tc.pod, gpus.lookup(), tc.others, gpus.Dirs())
			if tc.reason != "" {
				if rej == nil {
					t.Fatalf("admitted with %v, want %s", got, tc.reason)
				}
				if rej.Reason != tc.reason || !strings.Contains(rej.Message, tc.msg) {
					t.Fatalf("rejected %s: %q, want %s containing %q", rej.Reason, rej.Message, tc.reason, tc.msg)
				}
				return
			}
			if rej != nil {
				t.Fatalf("rejected: %+v", rej)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDevicePoolHoldsAcrossRestoreAndRelease(t *testing.T) {
	src := fakeDevices{"example.com/dev=0", "example.com/dev=1"}
	p := newDevicePool(src)
	pod := func(uid string, n int64) *v1.Pod {
		q := *resource.NewQuantity(n, resource.DecimalSI)
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{"example.com/dev": q}, Requests: v1.ResourceList{"example.com/dev": q}}}}}}
	}
	// A podvisor started again: the record of a running pod holds dev=1.
	p.restore(map[types.UID]*podRecord{"old": {Devices: map[string][]string{"c": {"example.com/dev=1"}}}, "none": {}})
	got, rej := p.admit(pod("a", 1))
	if rej != nil || !reflect.DeepEqual(got["c"], []string{"example.com/dev=0"}) {
		t.Fatalf("admit a: %v %+v, want dev=0", got, rej)
	}
	if _, rej := p.admit(pod("b", 1)); rej == nil || rej.Reason != "OutOfexample.com/dev" {
		t.Fatalf("admit b with both held: %+v, want OutOfexample.com/dev", rej)
	}
	p.release("old")
	got, rej = p.admit(pod("b", 1))
	if rej != nil || !reflect.DeepEqual(got["c"], []string{"example.com/dev=1"}) {
		t.Fatalf("admit b after release: %v %+v, want dev=1", got, rej)
	}
	// A pod asking for nothing is admitted with nothing recorded.
	if got, rej := p.admit(&v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}); got != nil || rej != nil {
		t.Fatalf("pod without devices: %v %+v", got, rej)
	}
}

// TestWorkerDeviceAdmission: a pod's devices reach its container's config
// and its record; a pod that does not fit is Failed with kubelet's reason
// and message, makes nothing, and is removed as any pod.
func TestWorkerDeviceAdmission(t *testing.T) {
	e := newEnv(t)
	e.s.devices = newDevicePool(fakeDevices{"example.com/dev=0"})
	ask := func(p *v1.Pod) *v1.Pod {
		q := resource.MustParse("1")
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{Limits: v1.ResourceList{"example.com/dev": q}, Requests: v1.ResourceList{"example.com/dev": q}}
		return p
	}
	a := ask(testPod("a", v1.RestartPolicyAlways, nil, "main"))
	wa := e.worker(a)
	e.step(wa)
	var cfgs []ContainerConfig
	e.rt.mu.Lock()
	for _, c := range e.rt.ctrs {
		cfgs = append(cfgs, c.cfg)
	}
	e.rt.mu.Unlock()
	if len(cfgs) != 1 || !reflect.DeepEqual(cfgs[0].CDIDevices, []string{"example.com/dev=0"}) {
		t.Fatalf("created %+v, want one container with example.com/dev=0", cfgs)
	}
	if !reflect.DeepEqual(wa.rec.Devices, map[string][]string{"main": {"example.com/dev=0"}}) {
		t.Errorf("record devices %v", wa.rec.Devices)
	}

	b := ask(testPod("b", v1.RestartPolicyAlways, nil, "main"))
	wb := e.worker(b)
	e.step(wb)
	st := e.st.pod(b.UID).Status
	wantMsg := "Pod was rejected: Node didn't have enough resource: example.com/dev, requested: 1, used: 1, capacity: 1"
	if st.Phase != v1.PodFailed || st.Reason != "OutOfexample.com/dev" || !strings.HasPrefix(st.Message, wantMsg) {
		t.Errorf("rejected pod status %s %s %q, want Failed OutOfexample.com/dev %q", st.Phase, st.Reason, st.Message, wantMsg)
	}
	if wb.rec.Sandbox != nil || len(e.rt.running()) != 1 {
		t.Errorf("rejected pod made a sandbox or container: %v %v", wb.rec.Sandbox, e.rt.running())
	}
	// Still rejected at its next step, even with the device free.
	e.s.devices.release(a.UID)
	e.step(wb)
	if st := e.st.pod(b.UID).Status; st.Reason != "OutOfexample.com/dev" {
		t.Errorf("a rejection is final for the pod: %s %s", st.Phase, st.Reason)
	}
	if _, finished := e.stopStep(wb); !finished {
		t.Errorf("a rejected pod's removal did not finish")
	}
}
