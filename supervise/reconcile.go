package supervise

import (
	"maps"

	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// reconcile starts workers for new pods, updates existing ones and asks
// workers of pods no longer desired to stop. A pod that replaces another of
// the same name starts only once the old one is gone, as kubelet does for
// static pods. records holds pods found at start-up not yet claimed.
func (s *Supervisor) reconcile(snap manifest.Snapshot, records map[types.UID]*podRecord, start func(*podWorker)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[types.UID]*manifest.Pod{}
	for _, p := range snap.Pods {
		want[p.Pod.UID] = p
	}
	objs := Objects{ConfigMaps: snap.ConfigMaps, Secrets: snap.Secrets, Claims: snap.Claims}
	if !sameObjects(objs, s.objs) {
		s.objs = objs
		for _, w := range s.workers {
			w.inbox.send(objectsMsg{objs: objs})
		}
	}
	busyNames := map[string]bool{}
	for uid, w := range s.workers {
		if _, ok := want[uid]; !ok && s.sent[uid] != nil {
			w.inbox.send(stopMsg{})
			s.sent[uid] = nil
		}
		busyNames[w.fullName] = true
	}
	for uid, r := range records {
		if _, ok := want[uid]; ok {
			continue
		}
		// Found at start-up but no longer desired: adopt it to stop it.
		w := newPodWorker(&s.workerDeps, uid, nil, r)
		w.stopping = true
		delete(records, uid)
		start(w)
		busyNames[r.fullName()] = true
	}
	for uid, p := range want {
		if w, ok := s.workers[uid]; ok {
			// The Source hands out an unchanged pod as the same *Pod.
			if s.sent[uid] != p {
				s.sent[uid] = p
				w.inbox.send(specMsg{pod: p})
			}
			continue
		}
		if busyNames[p.Pod.Namespace+"/"+p.Pod.Name] {
			continue
		}
		w := newPodWorker(&s.workerDeps, uid, p, records[uid])
		w.objs = s.objs
		delete(records, uid)
		s.sent[uid] = p
		start(w)
	}
	s.reclaimClaims(snap)
}

// sameObjects reports whether a and b hold the same objects: the Source
// hands out an unchanged object as the same pointer.
func sameObjects(a, b Objects) bool {
	return maps.Equal(a.ConfigMaps, b.ConfigMaps) && maps.Equal(a.Secrets, b.Secrets) && maps.Equal(a.Claims, b.Claims)
}

func (s *Supervisor) wakeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.workers {
		w.inbox.send(wakeMsg{})
	}
}

// reportManifestErrors turns each manifest error or warning (an insecure
// permission, say) not reported before into a Warning event: about the pod
// whose last good version keeps running from that file, or about the node
// when the file yields no pod. It returns the errors now reported.
func (s *Supervisor) reportManifestErrors(before map[string]bool, snap manifest.Snapshot) map[string]bool {
	now := map[string]bool{}
	for _, w := range snap.Warnings {
		msg := w.Error()
		now[msg] = true
		if !before[msg] {
			s.nodeEvent(v1.EventTypeWarning, "ManifestWarning", "%s", msg)
		}
	}
	for _, e := range snap.Errors {
		msg := e.Error()
		now[msg] = true
		if before[msg] {
			continue
		}
		reported := false
		for _, p := range snap.Pods {
			if p.Path == e.Path && p.Err != nil {
				s.status.Record(status.Event{Pod: p.Pod, Type: v1.EventTypeWarning, Reason: "InvalidManifest", Message: msg + " (the last good version keeps running)"})
				reported = true
			}
		}
		if !reported {
			s.nodeEvent(v1.EventTypeWarning, "InvalidManifest", "%s", msg)
		}
	}
	return now
}
