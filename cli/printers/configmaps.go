package printers

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/podvisor/podvisor/api"
	v1 "k8s.io/api/core/v1"
)

// LocalObjects prints the local ConfigMaps (kind "ConfigMap") or Secrets
// (kind "Secret") of items, the objects of that kind, as kubectl get
// configmaps and get secrets print them: NAME DATA AGE, and NAME TYPE DATA
// AGE for Secrets (AGE: since podvisor first saw this version). -o wide
// adds FILE (path:line) and PODS (the pods using it); -A and
// --show-labels add NAMESPACE and LABELS as for pods. An object whose
// document is invalid now (shown at its last good version) gets " (!)"
// after its name, as a pod does. -o name prints configmap/NAME or
// secret/NAME; -o json and yaml print the object when single and there is
// one, else a List. A Secret's data values are never printed: the API
// does not send them, and every value of data shows as
// api.RedactedValue, in every format.
func LocalObjects(w io.Writer, kind string, items []api.Object, single bool, o Options, now time.Time) error {
	out, err := o.output()
	if err != nil {
		return err
	}
	byKey := map[string]*api.Object{}
	var objs *objects
	switch kind {
	case "ConfigMap":
		var cms []v1.ConfigMap
		for i := range items {
			if items[i].ConfigMap != nil {
				cms = append(cms, *items[i].ConfigMap.DeepCopy())
				byKey[items[i].Namespace+"/"+items[i].Name] = &items[i]
			}
		}
		objs, err = newObjects("ConfigMap", cms, func(c *v1.ConfigMap) string { return c.Name })
	case "Secret":
		var secrets []map[string]any
		for i := range items {
			if items[i].Secret == nil {
				continue
			}
			g, err := redactedSecret(items[i].Secret)
			if err != nil {
				return err
			}
			secrets = append(secrets, g)
			byKey[items[i].Namespace+"/"+items[i].Name] = &items[i]
		}
		objs, err = newObjects("Secret", secrets, func(m *map[string]any) string { name, _ := metaOf(*m); return name })
	case "PersistentVolumeClaim":
		var claims []v1.PersistentVolumeClaim
		for i := range items {
			if items[i].PersistentVolumeClaim != nil {
				claims = append(claims, *items[i].PersistentVolumeClaim.DeepCopy())
				byKey[items[i].Namespace+"/"+items[i].Name] = &items[i]
			}
		}
		objs, err = newObjects("PersistentVolumeClaim", claims, func(c *v1.PersistentVolumeClaim) string { return c.Name })
	default:
		return fmt.Errorf("no printer for kind %q", kind)
	}
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
	if len(objs.generic) == 0 {
		return nil
	}
	var rows [][]string
	if !o.NoHeaders {
		h := []string{"NAME", "DATA", "AGE"}
		if kind == "Secret" {
			h = []string{"NAME", "TYPE", "DATA", "AGE"}
		}
		if kind == "PersistentVolumeClaim" {
			h = append([]string{}, claimHeader...)
			if o.Output == "wide" {
				h = append(h, "VOLUMEMODE")
			}
		}
		if o.Output == "wide" {
			h = append(h, "FILE", "PODS")
		}
		rows = append(rows, o.decorate(h, "NAMESPACE", "LABELS"))
	}
	for _, g := range objs.generic {
		name, ns := metaOf(g)
		obj := byKey[ns+"/"+name]
		rows = append(rows, o.decorate(localObjectRow(obj, o.Output == "wide", now), obj.Namespace, labelsString(objectLabels(obj))))
	}
	return (&Table{}).Print(w, rows...)
}

// localObjectRow is an object's row (without -A's and --show-labels'
// columns).
func localObjectRow(obj *api.Object, wide bool, now time.Time) []string {
	name := obj.Name
	if obj.Error != "" {
		name += " (!)"
	}
	var row []string
	if obj.PersistentVolumeClaim != nil {
		row = claimRow(name, obj.PersistentVolumeClaim, wide, now)
	} else if obj.Secret != nil {
		row = []string{name, string(obj.Secret.Type), fmt.Sprint(len(obj.Secret.Data)), sinceString(obj.Secret.CreationTimestamp, now)}
	} else {
		cm := obj.ConfigMap
		row = []string{name, fmt.Sprint(len(cm.Data) + len(cm.BinaryData)), sinceString(cm.CreationTimestamp, now)}
	}
	if wide {
		row = append(row, fmt.Sprintf("%s:%d", obj.File, obj.Line), orNone(strings.Join(podsOf(obj), ",")))
	}
	return row
}

// podsOf is the names of the pods using obj, each once, sorted.
func podsOf(obj *api.Object) []string {
	set := map[string]bool{}
	for _, r := range obj.UsedBy {
		_, name, _ := strings.Cut(r.Pod, "/")
		set[name] = true
	}
	return slices.Sorted(maps.Keys(set))
}

func objectLabels(obj *api.Object) map[string]string {
	if obj.Secret != nil {
		return obj.Secret.Labels
	}
	if obj.PersistentVolumeClaim != nil {
		return obj.PersistentVolumeClaim.Labels
	}
	return obj.ConfigMap.Labels
}

// metaOf is the name and namespace in an object's JSON form.
func metaOf(g any) (name, namespace string) {
	m, _ := g.(map[string]any)
	meta, _ := m["metadata"].(map[string]any)
	name, _ = meta["name"].(string)
	namespace, _ = meta["namespace"].(string)
	return name, namespace
}

// redactedSecret is a Secret's JSON form with each value of data (which
// the API sends empty) replaced by api.RedactedValue, and no stringData.
func redactedSecret(s *v1.Secret) (map[string]any, error) {
	c := s.DeepCopy()
	c.APIVersion, c.Kind = "v1", "Secret"
	keys := slices.Collect(maps.Keys(c.Data))
	c.Data, c.StringData = nil, nil
	g, err := toGeneric(c)
	if err != nil {
		return nil, err
	}
	m := g.(map[string]any)
	if len(keys) > 0 {
		data := map[string]any{}
		for _, k := range keys {
			data[k] = api.RedactedValue
		}
		m["data"] = data
	}
	return m, nil
}

// DescribeConfigMap prints a local ConfigMap as kubectl describe configmap
// does (Data with each value, BinaryData as sizes), with the manifest it
// comes from, that file's current error, the pods using it and the events
// about it.
func DescribeConfigMap(w io.Writer, obj *api.Object, events []v1.Event, now time.Time) error {
	cm := obj.ConfigMap
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := describePrinter(tw)
	describeObjectMeta(p, obj, cm.Labels, cm.Annotations)
	p(0, "")
	p(0, "Data")
	p(0, "====")
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		p(0, "%s:", k)
		p(0, "----")
		p(0, "%s", cm.Data[k])
		p(0, "")
	}
	p(0, "")
	p(0, "BinaryData")
	p(0, "====")
	for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		p(0, "%s: %d bytes", k, len(cm.BinaryData[k]))
	}
	p(0, "")
	describeUsers(p, obj)
	describeObjectEvents(p, obj, events, now)
	return tw.Flush()
}

// DescribeSecret prints a local Secret as kubectl describe secret does:
// Type, then Data as "key:  N bytes", never a value (not even a service
// account token's, which kubectl shows), with the manifest it comes from,
// that file's current error, the pods using it and the events about it.
func DescribeSecret(w io.Writer, obj *api.Object, events []v1.Event, now time.Time) error {
	s := obj.Secret
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := describePrinter(tw)
	describeObjectMeta(p, obj, s.Labels, s.Annotations)
	p(0, "")
	p(0, "Type:\t%s", s.Type)
	p(0, "")
	p(0, "Data")
	p(0, "====")
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		p(0, "%s:\t%d bytes", k, obj.DataSizes[k])
	}
	p(0, "")
	describeUsers(p, obj)
	describeObjectEvents(p, obj, events, now)
	return tw.Flush()
}

func describePrinter(w io.Writer) printer {
	return func(indent int, format string, args ...any) {
		io.WriteString(w, Escape(strings.Repeat("  ", indent)+fmt.Sprintf(format, args...))+"\n")
	}
}

func describeObjectMeta(p printer, obj *api.Object, labels, annotations map[string]string) {
	p(0, "Name:\t%s", obj.Name)
	p(0, "Namespace:\t%s", obj.Namespace)
	printMap(p, "Labels", labels)
	a := maps.Clone(annotations)
	delete(a, "kubectl.kubernetes.io/last-applied-configuration") // as kubectl describe
	printMap(p, "Annotations", a)
	p(0, "Manifest:\t%s:%d", obj.File, obj.Line)
	if obj.Error != "" {
		p(0, "Manifest Error:\t%s (using the last good version)", obj.Error)
	}
}

// describeUsers is podvisor's "Used by:" section: each pod and the fields
// through which it uses the object.
func describeUsers(p printer, obj *api.Object) {
	if len(obj.UsedBy) == 0 {
		p(0, "Used by:\t<none>")
		return
	}
	p(0, "Used by:")
	for _, r := range obj.UsedBy {
		_, pod := cutNamespace(r.Pod)
		use := r.Field
		if r.Key != "" {
			use += fmt.Sprintf(" (key %s)", r.Key)
		}
		var notes []string
		if r.Optional {
			notes = append(notes, "optional")
		}
		if r.KeyMissing {
			notes = append(notes, "key missing")
		}
		if len(notes) > 0 {
			use += " [" + strings.Join(notes, ", ") + "]"
		}
		p(1, "%s\t%s", pod, use)
	}
}

func cutNamespace(key string) (ns, name string) {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		return "", key
	}
	return ns, name
}

func describeObjectEvents(p printer, obj *api.Object, events []v1.Event, now time.Time) {
	var mine []v1.Event
	for _, e := range events {
		ref := e.InvolvedObject
		if ref.Kind == obj.Kind && ref.Name == obj.Name && (ref.Namespace == "" || ref.Namespace == obj.Namespace) {
			mine = append(mine, e)
		}
	}
	printEvents(p, mine, now)
}
