package printers

import (
	"cmp"
	"io"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Pods prints list as kubectl get pods prints it with the options o, now
// the current time. single says the user named exactly one pod (kubectl's
// single item implied): then, when list holds one pod, -o json, yaml and
// jsonpath print that Pod; otherwise they print a List of the pods
// (apiVersion v1, kind List), as kubectl does. --sort-by orders the pods
// in every format. An empty list prints nothing in the table, name and
// custom-columns formats; kubectl's "No resources found" line goes to
// stderr and is the caller's to print.
func Pods(w io.Writer, list *v1.PodList, single bool, o Options, now time.Time) error {
	out, err := o.output()
	if err != nil {
		return err
	}
	var items []v1.Pod
	if list != nil {
		items = list.DeepCopy().Items
	}
	for i := range items {
		items[i].APIVersion, items[i].Kind = "v1", "Pod"
	}
	objs, err := newObjects("Pod", items, func(p *v1.Pod) string { return p.Name })
	if err != nil {
		return err
	}
	if o.SortBy != "" {
		if err := objs.sortBy(o.SortBy); err != nil {
			return err
		}
	}
	if done, err := objs.print(w, out, single, o); done {
		return err
	}
	if len(objs.typed) == 0 {
		return nil
	}
	var rows [][]string
	if !o.NoHeaders {
		rows = append(rows, o.PodHeader())
	}
	for _, p := range objs.typed {
		rows = append(rows, o.PodRow(p.(*v1.Pod), now))
	}
	return (&Table{}).Print(w, rows...)
}

// PodHeader is the header of the pod table Pods prints with o (-o wide,
// -A, --show-labels), for a watch to print before o.PodRow's rows.
func (o Options) PodHeader() []string {
	return o.decorate(PodHeader(o.Output == "wide"), "NAMESPACE", "LABELS")
}

// PodRow is pod's row in the pod table Pods prints with o, its cells
// escaped.
func (o Options) PodRow(pod *v1.Pod, now time.Time) []string {
	return o.decorate(PodRow(pod, o.Output == "wide", now), Escape(pod.Namespace), Escape(labelsString(pod.Labels)))
}

// Events prints list as kubectl get events prints it with the options o,
// now the current time: sorted as SortEvents sorts, or by --sort-by, and
// -o json and yaml print a List (apiVersion v1, kind List) as kubectl
// does. An empty list prints nothing in the table, name and custom-columns
// formats.
func Events(w io.Writer, list *v1.EventList, o Options, now time.Time) error {
	out, err := o.output()
	if err != nil {
		return err
	}
	var items []v1.Event
	if list != nil {
		items = list.DeepCopy().Items
	}
	SortEvents(items)
	for i := range items {
		items[i].APIVersion, items[i].Kind = "v1", "Event"
	}
	objs, err := newObjects("Event", items, func(e *v1.Event) string { return e.Name })
	if err != nil {
		return err
	}
	if o.SortBy != "" {
		if err := objs.sortBy(o.SortBy); err != nil {
			return err
		}
	}
	if done, err := objs.print(w, out, false, o); done {
		return err
	}
	if len(objs.typed) == 0 {
		return nil
	}
	var rows [][]string
	if !o.NoHeaders {
		rows = append(rows, o.EventHeader())
	}
	for _, e := range objs.typed {
		rows = append(rows, o.EventRow(e.(*v1.Event), now))
	}
	return (&Table{}).Print(w, rows...)
}

// EventHeader is the header of the event table Events prints with o.
func (o Options) EventHeader() []string {
	return o.decorate(EventHeader(o.Output == "wide"), "NAMESPACE", "LABELS")
}

// EventRow is e's row in the event table Events prints with o, its cells
// escaped. An event without a namespace shows its object's.
func (o Options) EventRow(e *v1.Event, now time.Time) []string {
	ns := cmp.Or(e.Namespace, e.InvolvedObject.Namespace)
	return o.decorate(EventRow(e, o.Output == "wide", now), Escape(ns), Escape(labelsString(e.Labels)))
}

// decorate adds -A's first column and --show-labels' last one to a row.
func (o Options) decorate(row []string, namespace, labels string) []string {
	if o.AllNamespaces {
		row = append([]string{namespace}, row...)
	}
	if o.ShowLabels {
		row = append(row, labels)
	}
	return row
}
