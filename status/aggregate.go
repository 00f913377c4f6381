package status

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Aggregation follows client-go's EventAggregator
// (k8s.io/client-go/tools/record/events_cache.go): events that share their
// source, involved object (fieldPath aside), type and reason are similar;
// once aggregateMaxEvents similar events with different messages come
// within aggregateInterval of each other, the latest and every later one
// are folded into one aggregate event, whose message is aggregatePrefix and
// the latest message and whose count grows. A manifest file with 1,500
// invalid documents is then ten events, not 1,500.
const (
	aggregateMaxEvents = 10
	aggregateInterval  = 10 * time.Minute
	aggregatePrefix    = "(combined from similar events): "

	// maxAggregateRecords bounds the similar-event groups remembered, as
	// client-go's LRU of 4096 does.
	maxAggregateRecords = 4096
)

// aggregateKey is what similar events share: client-go's
// EventAggregatorByReasonFunc.
type aggregateKey struct {
	component, host                        string
	kind, namespace, name, apiVersion      string
	uid                                    types.UID
	eventType, reason                      string
	reportingController, reportingInstance string
}

func aggregateKeyOf(e *v1.Event) aggregateKey {
	o := &e.InvolvedObject
	return aggregateKey{
		component: e.Source.Component, host: e.Source.Host,
		kind: o.Kind, namespace: o.Namespace, name: o.Name, apiVersion: o.APIVersion, uid: o.UID,
		eventType: e.Type, reason: e.Reason,
		reportingController: e.ReportingController, reportingInstance: e.ReportingInstance,
	}
}

// isAggregate reports whether e is an aggregate event.
func isAggregate(e *v1.Event) bool {
	return strings.HasPrefix(e.Message, aggregatePrefix)
}

// similar is one group of similar events.
type similar struct {
	messages map[string]struct{} // told on their own, at most aggregateMaxEvents-1
	last     time.Time           // the latest of the group
}

// aggregator remembers groups of similar events and decides which event is
// folded into its group's aggregate. It is not safe for concurrent use.
type aggregator struct {
	groups map[aggregateKey]*similar
}

// fold records an event with key k and message at now and reports whether
// it is to be folded into the aggregate event of k. A message already told
// on its own is never folded: it is a repeat, counted on its own event.
//
// Unlike client-go, which forgets a random message once the group is full,
// the group keeps its first messages, so the decision depends only on what
// came before.
func (a *aggregator) fold(k aggregateKey, message string, now time.Time) bool {
	g := a.groups[k]
	if g == nil || now.Sub(g.last) > aggregateInterval {
		g = &similar{messages: map[string]struct{}{}}
		a.put(k, g, now)
	}
	g.last = now
	if _, told := g.messages[message]; told {
		return false
	}
	if len(g.messages) < aggregateMaxEvents-1 {
		g.messages[message] = struct{}{}
		return false
	}
	return true
}

// load remembers a stored event (one loaded from the journal), so that a
// restart does not tell again, one by one, what was being aggregated.
func (a *aggregator) load(e *v1.Event) {
	k := aggregateKeyOf(e)
	last := e.LastTimestamp.Time
	g := a.groups[k]
	if g == nil {
		g = &similar{messages: map[string]struct{}{}}
		a.put(k, g, last)
	}
	if last.After(g.last) {
		g.last = last
	}
	if !isAggregate(e) && len(g.messages) < aggregateMaxEvents-1 {
		g.messages[e.Message] = struct{}{}
	}
}

// put adds group g under k, first forgetting groups that have expired at
// now, or else the least recent one, when there are maxAggregateRecords.
func (a *aggregator) put(k aggregateKey, g *similar, now time.Time) {
	if a.groups == nil {
		a.groups = map[aggregateKey]*similar{}
	}
	if _, ok := a.groups[k]; !ok && len(a.groups) >= maxAggregateRecords {
		var oldest aggregateKey
		var oldestGroup *similar
		for gk, og := range a.groups {
			if now.Sub(og.last) > aggregateInterval {
				delete(a.groups, gk)
				continue
			}
			if oldestGroup == nil || og.last.Before(oldestGroup.last) {
				oldest, oldestGroup = gk, og
			}
		}
		if len(a.groups) >= maxAggregateRecords {
			delete(a.groups, oldest)
		}
	}
	a.groups[k] = g
}
