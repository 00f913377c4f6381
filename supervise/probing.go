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
// inbox; the worker reads started and ready from Status when it plans
// and publishes.
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
	s.mu.Lock()
	o, ok := s.probed[e.ContainerID]
	s.mu.Unlock()
	if !ok {
		return
	}
	s.status.Record(status.Event{Pod: o.pod, FieldPath: o.fieldPath, Type: e.Type, Reason: e.Reason, Message: e.Message})
}

// receiveProbe keeps what a probe result asks of the planner: a container
// whose liveness or startup probe failed is killed.
func (w *podWorker) receiveProbe(c probes.Change) {
	if !w.probing[c.ContainerID] {
		return // a run that has ended since
	}
	if c.Result == probes.Failure && (c.Kind == probes.Liveness || c.Kind == probes.Startup) {
		w.probeFailed[c.ContainerID] = map[probes.Kind]string{probes.Liveness: "liveness", probes.Startup: "startup"}[c.Kind]
	}
}

// watchProbes starts probing a running container once per run: after its
// start, or when a restarted podvisor finds it running. What the record
// keeps of its probes (started, ready) seeds them, so an adopted container
// is neither gated again nor killed for a history that was lost.
func (w *podWorker) watchProbes(pod *v1.Pod, ref ctrRef, c *v1.Container, cr *containerRecord) {
	if w.probing[cr.ID] || w.stopping {
		return
	}
	w.probing[cr.ID] = true
	meta := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID}}
	w.s.mu.Lock()
	w.s.probed[cr.ID] = probeOwner{pod: meta, fieldPath: ref.fieldPath()}
	w.s.mu.Unlock()
	w.s.prober.Add(w.probeTarget(pod, c, cr.ID, cr.StartedAt), probes.Seed{Started: cr.Started, Ready: cr.Ready})
}

// forgetProbes stops probing a container whose run ended.
func (w *podWorker) forgetProbes(ref ctrRef, id string) {
	if !w.probing[id] {
		return
	}
	delete(w.probing, id)
	delete(w.probeFailed, id)
	w.s.mu.Lock()
	delete(w.s.probed, id)
	w.s.mu.Unlock()
	w.s.prober.Remove(string(w.uid), ref.Name)
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

// probeViews is what the probes say of each running container, by
// container ID. It also keeps started and ready in the record. A run not
// probed yet is what the record last knew of it: false for a new run, and
// for a run a restarted podvisor has not adopted yet what it was, so the
// status published before adoption does not flip it to not ready.
func (w *podWorker) probeViews(pod *v1.Pod) map[string]probeView {
	out := map[string]probeView{}
	w.rec.each(pod, func(_ ctrRef, _ *v1.Container, cr *containerRecord) {
		if cr.ID != "" && !w.probing[cr.ID] && !w.stopping {
			out[cr.ID] = probeView{Started: cr.Started, Ready: cr.Ready}
		}
	})
	w.eachProbed(pod, func(_ *v1.Container, cr *containerRecord, st probes.Status) {
		if !w.stopping {
			cr.Started, cr.Ready = st.Started, st.Ready
		}
		out[cr.ID] = probeView{Started: st.Started, Ready: st.Ready, Failed: w.probeFailed[cr.ID]}
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
		if st := w.s.prober.Status(string(w.uid), c.Name); st.ContainerID == cr.ID {
			f(c, cr, st)
		}
	})
}
