package supervise

import (
	"context"
	"strings"

	"github.com/podvisor/podvisor/probes"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Prober runs the containers' probes; *probes.Manager is the one
// implementation. Its results reach the worker as probeMsg through the
// inbox; the worker then reads started and ready from Status into the
// record (and once when it adds a run), and plans and publishes from the
// record. describe's last results are read from Status when published.
type Prober interface {
	Add(t probes.Target, seed probes.Seed)
	Remove(podUID, container string)
	RemovePod(podUID string)
	Terminating(podUID string)
	Status(podUID, container string) probes.Status
}

var _ Prober = (*probes.Manager)(nil)

// probeMsg is a probe result that changed after its thresholds.
type probeMsg struct{ change probes.Change }

func (probeMsg) isMessage() {}

// runtimeExec runs probe and hook commands through the runtime.
type runtimeExec struct{ rt Runtime }

// maxExecOutput is what kubelet keeps of a probe command's output.
const maxExecOutput = 10 << 10

func (e runtimeExec) Exec(ctx context.Context, id string, cmd []string) ([]byte, int, error) {
	out := &boundedBuffer{max: maxExecOutput}
	code, err := e.rt.Exec(ctx, id, ExecProcess{Args: cmd, Stdout: out, Stderr: out})
	return out.b, code, err
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	b   []byte
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if n := b.max - len(b.b); n > 0 {
		b.b = append(b.b, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

// probeChanged hands a probe result to the container's worker.
func (s *Supervisor) probeChanged(c probes.Change) {
	if w := s.owner(c.ContainerID); w != nil {
		w.inbox.send(probeMsg{change: c})
	}
}

// probeOwner is what an event about a probed container names.
type probeOwner struct {
	pod       *v1.Pod // metadata only
	fieldPath string
}

// probeEvent records a probe run worth telling (Unhealthy, ProbeWarning)
// against the pod, as kubelet's prober records them.
func (s *Supervisor) probeEvent(e probes.Event) {
	o, ok := s.probed.get(e.ContainerID)
	if !ok {
		return
	}
	s.status.Record(status.Event{Pod: o.pod, FieldPath: o.fieldPath, Type: e.Type, Reason: e.Reason, Message: e.Message})
}

// receiveProbe takes a probe result as it arrives: what the probes now say
// of the run (started, ready) lands in the record, and a container whose
// liveness or startup probe failed is marked for the planner to kill.
func (w *podWorker) receiveProbe(c probes.Change) {
	if !w.probing[c.ContainerID] {
		return // a run that has ended since
	}
	if c.Result == probes.Failure && (c.Kind == probes.Liveness || c.Kind == probes.Startup) {
		w.probeFailed[c.ContainerID] = map[probes.Kind]string{probes.Liveness: "liveness", probes.Startup: "startup"}[c.Kind]
	}
	w.noteProbes(c.Container, c.ContainerID)
}

// noteProbes keeps in the record what the prober says of run id of the
// container: its started and ready. A stopping pod's record keeps what was
// known before the stop (its probes no longer run).
func (w *podWorker) noteProbes(container, id string) {
	if w.halting() || w.rec == nil {
		return
	}
	cr := w.rec.byID(id)
	if cr == nil {
		return
	}
	if st := w.d.prober.Status(string(w.uid), container); st.ContainerID == id {
		cr.Started, cr.Ready = st.Started, st.Ready
	}
}

// watchProbes starts probing a running container once per run: after its
// start, or when the planner finds it running unprobed (adopted, or found
// by a restarted podvisor). What the record keeps of its probes (started,
// ready) seeds them, so an adopted container is neither gated again nor
// killed for a history that was lost.
func (w *podWorker) watchProbes(pod *v1.Pod, ref ctrRef, c *v1.Container, cr *containerRecord) {
	if w.probing[cr.ID] || w.halting() {
		return
	}
	w.probing[cr.ID] = true
	meta := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID}}
	w.d.probed.set(cr.ID, probeOwner{pod: meta, fieldPath: ref.fieldPath()})
	w.d.prober.Add(w.probeTarget(pod, c, cr.ID, cr.StartedAt), probes.Seed{Started: cr.Started, Ready: cr.Ready})
	w.noteProbes(c.Name, cr.ID)
}

// forgetProbes stops probing a container whose run ended.
func (w *podWorker) forgetProbes(ref ctrRef, id string) {
	delete(w.hookFailed, id)
	if !w.probing[id] {
		return
	}
	delete(w.probing, id)
	delete(w.probeFailed, id)
	w.d.probed.remove(id)
	w.d.prober.Remove(string(w.uid), ref.Name)
}

// probeResults are the last results of the running containers' probes,
// for describe.
func (w *podWorker) probeResults(pod *v1.Pod) status.ProbeResults {
	var out status.ProbeResults
	w.eachProbed(pod, func(c *v1.Container, _ *containerRecord, st probes.Status) {
		for k, ps := range st.Probes {
			if ps.Time.IsZero() {
				continue
			}
			if out == nil {
				out = status.ProbeResults{}
			}
			if out[c.Name] == nil {
				out[c.Name] = map[string]status.ProbeResult{}
			}
			out[c.Name][strings.ToLower(k.String())] = status.ProbeResult{Result: ps.Last.String(), Message: ps.Message, Time: ps.Time}
		}
	})
	return out
}

// probeViews is what the probes say of each container with a run, by
// container ID, as the record keeps it (probe results land there when they
// arrive). It writes nothing. A run not probed yet is what the record last
// knew of it: false for a new run, and for a run a restarted podvisor has
// not adopted yet what it was, so the status published before adoption does
// not flip it to not ready. A stopping pod's containers are not ready.
func probeViews(pod *v1.Pod, rec *podRecord, stopping bool, probing map[string]bool, failed map[string]string) map[string]probeView {
	out := map[string]probeView{}
	rec.each(pod, func(_ ctrRef, _ *v1.Container, cr *containerRecord) {
		switch {
		case cr.ID == "":
		case !stopping:
			out[cr.ID] = probeView{Started: cr.Started, Ready: cr.Ready, Failed: failed[cr.ID]}
		case probing[cr.ID]:
			out[cr.ID] = probeView{Started: cr.Started, Failed: failed[cr.ID]}
		}
	})
	return out
}

// eachProbed calls f for each container whose current run is probed, with
// what the prober says of that run.
func (w *podWorker) eachProbed(pod *v1.Pod, f func(c *v1.Container, cr *containerRecord, st probes.Status)) {
	w.rec.each(pod, func(_ ctrRef, c *v1.Container, cr *containerRecord) {
		if cr.ID == "" || !w.probing[cr.ID] {
			return
		}
		if st := w.d.prober.Status(string(w.uid), c.Name); st.ContainerID == cr.ID {
			f(c, cr, st)
		}
	})
}
