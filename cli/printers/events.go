package printers

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EventHeader is the header of kubectl's event table (kubectl get events;
// wide: with its wide columns).
func EventHeader(wide bool) []string {
	if wide {
		return []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN", "COUNT", "NAME"}
	}
	return []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}
}

// EventRow is e's row in kubectl's event table, kubectl's printEvent
// (pkg/printers/internalversion/printers.go) for the v1 types, its cells
// escaped (Escape): an event's message may quote a container's output.
func EventRow(e *v1.Event, wide bool, now time.Time) []string {
	first := sinceString(e.FirstTimestamp, now)
	if e.FirstTimestamp.IsZero() && !e.EventTime.IsZero() {
		first = sinceString(metav1.NewTime(e.EventTime.Time), now)
	}
	last := sinceString(e.LastTimestamp, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last, count = sinceString(metav1.NewTime(e.Series.LastObservedTime.Time), now), e.Series.Count
	} else if count == 0 {
		count = 1
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	msg := strings.TrimSpace(e.Message)
	row := []string{last, e.Type, e.Reason, target, msg}
	if wide {
		row = []string{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath,
			eventSource(e), msg, first, strconv.Itoa(int(count)), e.Name}
	}
	escapeAll(row)
	return row
}

// eventSource is kubectl's formatEventSource.
func eventSource(e *v1.Event) string {
	component := cmp.Or(e.Source.Component, e.ReportingController)
	instance := cmp.Or(e.Source.Host, e.ReportingInstance)
	switch {
	case component == "":
		return ""
	case instance == "":
		return component
	}
	return component + ", " + instance
}

// SortEvents sorts events by when they were last seen, oldest first (as
// kubectl events does, and kubectl get events --sort-by=.lastTimestamp);
// ties keep their order.
func SortEvents(events []v1.Event) {
	slices.SortStableFunc(events, func(a, b v1.Event) int {
		return eventTime(&a).Compare(eventTime(&b))
	})
}

func eventTime(e *v1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.EventTime.Time
}

// PrintEvents prints list as kubectl get events does, sorted by SortEvents,
// with now as the current time: format "" is the table LAST SEEN TYPE
// REASON OBJECT MESSAGE, "wide" adds SUBOBJECT SOURCE FIRST SEEN COUNT
// NAME, "json" and "yaml" print the v1.EventList. Any other format is an
// error. An empty list prints nothing in table formats.
func PrintEvents(w io.Writer, list *v1.EventList, format string, now time.Time) error {
	out := &v1.EventList{}
	if list != nil {
		out = list.DeepCopy()
	}
	SortEvents(out.Items)
	switch format {
	case "", "wide":
		if len(out.Items) == 0 {
			return nil
		}
		rows := [][]string{EventHeader(format == "wide")}
		for i := range out.Items {
			rows = append(rows, EventRow(&out.Items[i], format == "wide", now))
		}
		return (&Table{}).Print(w, rows...)
	case "json", "yaml":
		out.APIVersion, out.Kind = "v1", "EventList"
		for i := range out.Items {
			out.Items[i].APIVersion, out.Items[i].Kind = "v1", "Event"
		}
		return PrintObject(w, out, format)
	}
	return fmt.Errorf("unknown output format %q: want one of \"\", wide, json, yaml", format)
}
