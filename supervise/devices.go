package supervise

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/podvisor/podvisor/internal/cdidev"
	"github.com/podvisor/podvisor/manifest/podfile"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Devices for extended resources, as kubelet's device manager gives them,
// with the node's CDI specs in place of device plugins:
//
//   - An extended resource (nvidia.com/gpu: 1) names a CDI kind
//     (vendor/class). The node's capacity of it is the number of devices
//     of that kind, the "all" device left out. A pod whose request does not
//     fit what is free is rejected at admission as kubelet rejects it:
//     Failed, reason OutOf<resource>, "Pod was rejected: Node didn't have
//     enough resource: ...". The pod's request is kubelet's: the sum of its
//     app containers and sidecars, or its largest init container if more.
//   - Each container gets its count of named devices, lowest free first;
//     an init container's devices are given again to the containers after
//     it, as kubelet's device manager reuses them.
//   - Pod annotations cdi.k8s.io/<key>: <vendor/class=name>,... name
//     devices for every container of the pod, as containerd's CRI plugin
//     injects them. A device so named that no spec defines, or that
//     another pod holds, rejects the pod (UnexpectedAdmissionError).
//   - No device is shared between pods: the CDI format has no notion of a
//     shareable device, so a device (or "all" of a kind) held by one pod is
//     given to no other until that pod is gone. The containers of one pod
//     share what the pod holds by annotation.
//   - What each container got is in the pod's record, so a restarted
//     podvisor gives the same devices again and counts them as held. A pod
//     holds its devices until its record goes (the pod removed), through
//     restarts and the node's stops.
//   - A rejection is final for that pod's UID while podvisor runs (a
//     changed manifest is a new pod); a podvisor that starts again admits
//     the pods it did not admit, as kubelet does after its restart.

// DeviceSource is the node's CDI devices (*cdidev.Registry).
type DeviceSource interface {
	// Devices returns the fully qualified names of the devices of kind,
	// "all" left out, in allocation order.
	Devices(kind string) []string
	// Has reports whether a spec defines device (fully qualified).
	Has(device string) bool
	// Dirs returns the spec dirs, for messages.
	Dirs() []string
}

var _ DeviceSource = (*cdidev.Registry)(nil)

// CDIAnnotationPrefix starts the pod annotations that name CDI devices for
// the pod's containers.
const CDIAnnotationPrefix = "cdi.k8s.io/"

// Kubelet's admission reasons.
const (
	ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"
	rejectedPrefix                 = "Pod was rejected: "
)

// rejection is why admission refused a pod: its status reason and message
// (the event's; the status message has rejectedPrefix).
type rejection struct {
	Reason  string
	Message string
}

// devicePool is the devices the pods hold on this node.
type devicePool struct {
	src  DeviceSource // nil: the node has no devices
	mu   sync.Mutex
	held map[types.UID][]string
}

func newDevicePool(src DeviceSource) *devicePool {
	return &devicePool{src: src, held: map[types.UID][]string{}}
}

// restore counts as held the devices the records say their pods got.
func (p *devicePool) restore(records map[types.UID]*podRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid, r := range records {
		if r.Devices != nil {
			p.held[uid] = recordDevices(r.Devices)
		}
	}
}

// release frees what pod uid held.
func (p *devicePool) release(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.held, uid)
}

// admit gives pod its devices and holds them, or says why it cannot. The
// result is what each container gets (by name; nil when the pod asks for
// none).
func (p *devicePool) admit(pod *v1.Pod) (map[string][]string, *rejection) {
	if !needsDevices(pod) {
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	others := map[string]types.UID{}
	for uid, ds := range p.held {
		if uid == pod.UID {
			continue
		}
		for _, d := range ds {
			others[d] = uid
		}
	}
	var dirs []string
	if p.src != nil {
		dirs = p.src.Dirs()
	}
	alloc, rej := allocateDevices(pod, p.lookup(), others, dirs)
	if rej != nil {
		return nil, rej
	}
	p.held[pod.UID] = recordDevices(alloc)
	return alloc, nil
}

// lookup returns the source's view, or an empty one.
func (p *devicePool) lookup() deviceLookup {
	if p.src == nil {
		return deviceLookup{devices: func(string) []string { return nil }, has: func(string) bool { return false }}
	}
	return deviceLookup{devices: p.src.Devices, has: p.src.Has}
}

// recordDevices is every device of an allocation, once.
func recordDevices(alloc map[string][]string) []string {
	seen := map[string]bool{}
	for _, ds := range alloc {
		for _, d := range ds {
			seen[d] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// deviceLookup is what allocateDevices reads of the node's specs.
type deviceLookup struct {
	devices func(kind string) []string
	has     func(device string) bool
}

// needsDevices reports whether pod asks for devices: an extended resource
// or a CDI annotation.
func needsDevices(pod *v1.Pod) bool {
	for k := range pod.Annotations {
		if strings.HasPrefix(k, CDIAnnotationPrefix) {
			return true
		}
	}
	for _, c := range allContainers(pod) {
		if len(containerDeviceRequests(c)) > 0 {
			return true
		}
	}
	return false
}

func allContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// containerDeviceRequests is the container's count of each extended
// resource: its request (defaulted from its limit, which validation holds
// equal).
func containerDeviceRequests(c *v1.Container) map[string]int64 {
	var out map[string]int64
	add := func(rl v1.ResourceList) {
		for name, q := range rl {
			if !podfile.IsDeviceResource(name) || q.Value() <= 0 {
				continue
			}
			if out == nil {
				out = map[string]int64{}
			}
			if _, ok := out[string(name)]; !ok {
				out[string(name)] = q.Value()
			}
		}
	}
	add(c.Resources.Requests)
	add(c.Resources.Limits)
	return out
}

// PodDeviceRequest is kubelet's request of a pod for one resource: app
// containers and sidecars add up; a regular init container runs beside the
// sidecars started before it only.
func PodDeviceRequest(pod *v1.Pod, kind string) int64 {
	var sum, sidecars, initMax int64
	for i := range pod.Spec.Containers {
		sum += containerDeviceRequests(&pod.Spec.Containers[i])[kind]
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		n := containerDeviceRequests(c)[kind]
		if isSidecar(c) {
			sum += n
			sidecars += n
			continue
		}
		initMax = max(initMax, n+sidecars)
	}
	return max(sum, initMax)
}

// cdiAnnotationDevices returns the devices the pod's CDI annotations name,
// in key order, once each, with the key naming each.
func cdiAnnotationDevices(pod *v1.Pod) ([]string, map[string]string, error) {
	var out []string
	from := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(pod.Annotations)) {
		if !strings.HasPrefix(k, CDIAnnotationPrefix) {
			continue
		}
		for _, d := range strings.Split(pod.Annotations[k], ",") {
			d = strings.TrimSpace(d)
			if _, err := cdidev.ParseDevice(d); err != nil {
				return nil, nil, fmt.Errorf("annotation %s: device %q: %v", k, d, err)
			}
			if _, dup := from[d]; !dup {
				from[d] = k
				out = append(out, d)
			}
		}
	}
	return out, from, nil
}

// allocateDevices decides each container's devices: the pod's annotated
// devices for all, then each extended resource's count from the devices
// of its kind that others do not hold. It is pure.
func allocateDevices(pod *v1.Pod, src deviceLookup, others map[string]types.UID, dirs []string) (map[string][]string, *rejection) {
	unexpected := func(format string, args ...any) *rejection {
		return &rejection{Reason: ReasonUnexpectedAdmissionError, Message: "Allocate failed due to " + fmt.Sprintf(format, args...) + ", which is unexpected"}
	}
	dirList := strings.Join(dirs, ", ")
	if dirList == "" {
		dirList = "no spec dirs"
	}
	// heldAll: kinds of which another pod holds "all"; heldKind: kinds of
	// which another pod holds a device.
	heldAll, heldKind := map[string]bool{}, map[string]bool{}
	for d := range others {
		kind, name, _ := strings.Cut(d, "=")
		heldKind[kind] = true
		if name == cdidev.AllDevice {
			heldAll[kind] = true
		}
	}
	free := func(kind string, own map[string]bool) []string {
		if heldAll[kind] {
			return nil
		}
		var out []string
		for _, d := range src.devices(kind) {
			if _, taken := others[d]; !taken && !own[d] {
				out = append(out, d)
			}
		}
		return out
	}

	annotated, from, err := cdiAnnotationDevices(pod)
	if err != nil {
		return nil, unexpected("%v", err)
	}
	own := map[string]bool{}
	for _, d := range annotated {
		kind, name, _ := strings.Cut(d, "=")
		if !src.has(d) {
			return nil, unexpected("device %s named by annotation %s: no CDI spec in %s defines it", d, from[d], dirList)
		}
		if uid, taken := others[d]; taken {
			return nil, unexpected("device %s named by annotation %s: pod %s holds it", d, from[d], uid)
		}
		if heldAll[kind] || (name == cdidev.AllDevice && heldKind[kind]) {
			return nil, unexpected("device %s named by annotation %s: another pod holds devices of %s", d, from[d], kind)
		}
		own[d] = true
	}

	// Admission: every resource must fit what is free (kubelet's
	// predicate), before any device is given.
	kinds := map[string]bool{}
	for _, c := range allContainers(pod) {
		for k := range containerDeviceRequests(c) {
			kinds[k] = true
		}
	}
	freeByKind := map[string][]string{}
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		want := PodDeviceRequest(pod, kind)
		f := free(kind, own)
		if cdidev.IsKind(kind) && !own[kind+"="+cdidev.AllDevice] {
			freeByKind[kind] = f
		} else {
			f = nil
		}
		capacity := int64(len(src.devices(kind)))
		if !cdidev.IsKind(kind) {
			capacity = 0
		}
		if want > int64(len(f)) {
			used := max(capacity-int64(len(f)), 0)
			msg := fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", kind, want, used, capacity)
			if capacity == 0 {
				msg += fmt.Sprintf(" (no CDI spec in %s defines devices of kind %s)", dirList, kind)
			} else {
				msg += fmt.Sprintf(" (CDI devices of kind %s in %s)", kind, dirList)
			}
			return nil, &rejection{Reason: "OutOf" + kind, Message: msg}
		}
	}

	// Allocation, container by container in start order.
	alloc := map[string][]string{}
	reuse := map[string][]string{} // by kind: devices of finished init containers
	take := func(c *v1.Container, sidecarOrApp bool) {
		ds := slices.Clone(annotated)
		reqs := containerDeviceRequests(c)
		for _, kind := range slices.Sorted(maps.Keys(reqs)) {
			n := int(reqs[kind])
			var got []string
			for len(got) < n && len(reuse[kind]) > 0 {
				got = append(got, reuse[kind][0])
				reuse[kind] = reuse[kind][1:]
			}
			for len(got) < n && len(freeByKind[kind]) > 0 {
				got = append(got, freeByKind[kind][0])
				freeByKind[kind] = freeByKind[kind][1:]
			}
			if !sidecarOrApp {
				// Given again once this init container is done.
				reuse[kind] = append(got, reuse[kind]...)
				slices.SortFunc(reuse[kind], cdidev.CompareDevices)
			}
			ds = append(ds, got...)
		}
		if len(ds) > 0 {
			alloc[c.Name] = ds
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		take(c, isSidecar(c))
	}
	for i := range pod.Spec.Containers {
		take(&pod.Spec.Containers[i], true)
	}
	if len(alloc) == 0 {
		// Admitted with nothing to give: still a record that says so.
		alloc = map[string][]string{}
	}
	return alloc, nil
}

// admit runs the pod's admission once: on its first step, unless its
// record says it was admitted. It returns the rejection that holds the
// pod, if any, or an error when the admission could not be recorded (the
// step retries it).
func (w *podWorker) admit(pod *v1.Pod) (*rejection, error) {
	if w.stopping {
		return nil, nil // a rejected pod is removed as any other
	}
	if w.rejected != nil || w.rec.Devices != nil || w.d.devices == nil {
		return w.rejected, nil
	}
	alloc, rej := w.d.devices.admit(pod)
	if rej != nil {
		w.rejected = rej
		w.log.Warn("pod rejected", "reason", rej.Reason, "message", rej.Message)
		w.event(pod, "", v1.EventTypeWarning, rej.Reason, "%s", rej.Message)
		return rej, nil
	}
	if alloc != nil {
		w.rec.Devices = alloc
		// On disk before any container is made with them: a podvisor
		// restarted without the record could give them to another pod.
		if err := w.save(); err != nil {
			w.rec.Devices = nil
			w.d.devices.release(w.uid)
			return nil, fmt.Errorf("record the pod's devices: %w", err)
		}
		w.log.Info("devices allocated", "devices", recordDevices(alloc))
	}
	return nil, nil
}
