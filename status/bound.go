package status

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// objectKey is the object an event is about, whatever part of it
// (fieldPath) the event names.
type objectKey struct {
	kind, namespace, name string
	uid                   types.UID
}

func objectKeyOf(e *v1.Event) objectKey {
	o := &e.InvolvedObject
	return objectKey{kind: o.Kind, namespace: o.Namespace, name: o.Name, uid: o.UID}
}

// trim drops events so that no object has more than perObject of them and
// all objects together no more than total, and returns what is kept, in
// order. events is ordered oldest first and is reused.
//
// Each object loses its oldest events first. Over total, the object with
// the most events loses one, again and again (on a tie, the object with the
// oldest event): one noisy object, the node reporting a bad manifest or a
// crash-looping pod, can only evict its own events, never the last ones of
// a quiet pod.
func trim(events []v1.Event, perObject, total int) []v1.Event {
	type tally struct{ kept, drop int }
	tallies := map[objectKey]*tally{}
	var byOldest []*tally // the objects, by their oldest event
	for i := range events {
		k := objectKeyOf(&events[i])
		t := tallies[k]
		if t == nil {
			t = &tally{}
			tallies[k] = t
			byOldest = append(byOldest, t)
		}
		t.kept++
	}
	kept := len(events)
	for _, t := range byOldest {
		if t.kept > perObject {
			t.drop = t.kept - perObject
			t.kept = perObject
			kept -= t.drop
		}
	}
	for kept > total {
		most := byOldest[0]
		for _, t := range byOldest[1:] {
			if t.kept > most.kept {
				most = t
			}
		}
		most.kept--
		most.drop++
		kept--
	}
	if kept == len(events) {
		return events
	}
	out := events[:0]
	for i := range events {
		if t := tallies[objectKeyOf(&events[i])]; t.drop > 0 {
			t.drop--
			continue
		}
		out = append(out, events[i])
	}
	clear(events[len(out):]) // let the dropped events go
	return out
}
