package cli

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/cli/printers"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
)

// objectKind is a kind of local object the CLI shows: the ConfigMaps and
// Secrets of the manifests directory.
type objectKind struct {
	kind    string   // "ConfigMap"
	plural  string   // "configmaps", kubectl's resource name
	aliases []string // kubectl's singular and short names
}

var (
	configMapKind = objectKind{kind: "ConfigMap", plural: "configmaps", aliases: []string{"configmap", "cm"}}
	secretKind    = objectKind{kind: "Secret", plural: "secrets", aliases: []string{"secret"}}
	claimKind     = objectKind{kind: "PersistentVolumeClaim", plural: "persistentvolumeclaims", aliases: []string{"persistentvolumeclaim", "pvc"}}
)

// objectOptions are the flags of get configmaps|secrets and describe
// configmap|secret.
type objectOptions struct {
	print printers.Options
	sel   podSelection
}

func (o *objectOptions) addFlags(fs *pflag.FlagSet, get bool) {
	fs.StringVarP(&o.sel.namespace, "namespace", "n", "", "only objects of this namespace (default: all namespaces)")
	fs.StringVarP(&o.sel.selector, "selector", "l", "", "label selector to filter on, as kubectl's (-l app=web)")
	if !get {
		return
	}
	fs.BoolVarP(&o.sel.allNamespaces, "all-namespaces", "A", false, "every namespace (podvisor's default too), with a NAMESPACE column")
	fs.StringVarP(&o.print.Output, "output", "o", "", "output format: wide (adds FILE and PODS), json, yaml, name, jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC or custom-columns-file=FILE")
	fs.BoolVar(&o.print.NoHeaders, "no-headers", false, "leave out the header line")
	fs.BoolVar(&o.print.ShowLabels, "show-labels", false, "show each object's labels as a LABELS column")
	fs.StringVar(&o.print.SortBy, "sort-by", "", "sort by a JSONPath expression such as .metadata.name")
}

// list asks the daemon for the objects of kind k and keeps those the
// namespace, the selector and the names select. A name that matches
// nothing is kubectl's NotFound error.
func (o *objectOptions) list(cmd *cobra.Command, g *globalOptions, k objectKind, names []string) ([]api.Object, error) {
	sel := labels.Everything()
	if o.sel.selector != "" {
		var err error
		if sel, err = labels.Parse(o.sel.selector); err != nil {
			return nil, usageErrorf("-l/--selector %q: %v", o.sel.selector, err)
		}
	}
	for _, n := range names {
		if n == "" || strings.Contains(n, "/") {
			return nil, usageErrorf("%q: name a %s by its name, in -n's namespace", n, strings.ToLower(k.kind))
		}
	}
	client, err := g.client()
	if err != nil {
		return nil, err
	}
	list, err := client.Objects(cmd.Context(), k.kind)
	if err != nil {
		return nil, err
	}
	ns := o.sel.ns()
	var keep []api.Object
	found := map[string]bool{}
	for _, obj := range list.Items {
		var l map[string]string
		if obj.ConfigMap != nil {
			l = obj.ConfigMap.Labels
		} else if obj.Secret != nil {
			l = obj.Secret.Labels
		} else if obj.PersistentVolumeClaim != nil {
			l = obj.PersistentVolumeClaim.Labels
		}
		if ns != "" && obj.Namespace != ns || !sel.Matches(labels.Set(l)) {
			continue
		}
		if len(names) > 0 && !slices.Contains(names, obj.Name) {
			continue
		}
		found[obj.Name] = true
		keep = append(keep, obj)
	}
	var missing []string
	for _, n := range names {
		if !found[n] {
			missing = append(missing, fmt.Sprintf("%s %q not found%s", k.plural, n, o.sel.where()))
		}
	}
	if len(missing) > 0 {
		// kubectl prints what it found and fails naming what it did not.
		return keep, exitf(1, "%s", strings.Join(missing, "; "))
	}
	return keep, nil
}

// newGetObjectsCommand is podvisor get configmaps|secrets [NAME...].
func newGetObjectsCommand(g *globalOptions, k objectKind) *cobra.Command {
	o := &objectOptions{}
	cmd := &cobra.Command{
		Use:     k.plural + " [NAME...]",
		Aliases: k.aliases,
		Short:   fmt.Sprintf("list the local %ss of the manifests directory, as kubectl get %s (the versions in use; -o wide: file and pods)", k.kind, k.plural),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.get(cmd, g, k, args)
		},
	}
	o.addFlags(cmd.Flags(), true)
	return cmd
}

// get prints the objects of kind k that names (none: all) and the flags
// select.
func (o *objectOptions) get(cmd *cobra.Command, g *globalOptions, k objectKind, names []string) error {
	o.print.AllNamespaces = o.sel.allNamespaces
	if err := o.print.Validate(); err != nil {
		return usageError{err}
	}
	items, notFound := o.list(cmd, g, k, names)
	if notFound != nil && len(items) == 0 {
		return notFound
	}
	if len(items) == 0 && o.print.Output != "json" && o.print.Output != "yaml" {
		noResources(cmd.ErrOrStderr(), o.sel.ns())
		return nil
	}
	if err := printers.LocalObjects(cmd.OutOrStdout(), k.kind, items, len(names) == 1, o.print, time.Now()); err != nil {
		return err
	}
	return notFound
}

// newDescribeObjectsCommand is podvisor describe configmap|secret [NAME...].
func newDescribeObjectsCommand(g *globalOptions, k objectKind) *cobra.Command {
	o := &objectOptions{}
	singular := k.aliases[0]
	cmd := &cobra.Command{
		Use:     singular + " [NAME...]",
		Aliases: append([]string{k.plural}, k.aliases[1:]...),
		Short:   fmt.Sprintf("show local %ss in detail, as kubectl describe %s, with the pods using each (no name: every one)", k.kind, singular),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.describe(cmd, g, k, args)
		},
	}
	o.addFlags(cmd.Flags(), false)
	return cmd
}

// describe prints the objects of kind k that names (none: all) and the
// flags select, as kubectl describe.
func (o *objectOptions) describe(cmd *cobra.Command, g *globalOptions, k objectKind, names []string) error {
	singular := k.aliases[0]
	items, notFound := o.list(cmd, g, k, names)
	if notFound != nil && len(items) == 0 {
		return notFound
	}
	if len(items) == 0 {
		noResources(cmd.ErrOrStderr(), o.sel.ns())
		return nil
	}
	client, err := g.client()
	if err != nil {
		return err
	}
	events, err := client.Events(cmd.Context())
	if err != nil {
		return err
	}
	now := time.Now()
	var out bytes.Buffer
	for i := range items {
		if i > 0 {
			out.WriteString("\n\n")
		}
		describe := printers.DescribeConfigMap
		switch k.kind {
		case "Secret":
			describe = printers.DescribeSecret
		case "PersistentVolumeClaim":
			describe = printers.DescribeClaim
		}
		if err := describe(&out, &items[i], events.Items, now); err != nil {
			return fmt.Errorf("describe %s %s: %w", singular, items[i].Name, err)
		}
	}
	if _, err := out.WriteTo(cmd.OutOrStdout()); err != nil {
		return err
	}
	return notFound
}

// objectArgs reads kubectl's TYPE/NAME arguments of a ConfigMap or Secret
// type (configmap/conf, cm/conf, secrets/creds): ok is false when the
// first argument is not one; otherwise every argument must name the same
// kind.
func objectArgs(args []string) (k objectKind, names []string, ok bool, err error) {
	kindOf := func(arg string) (objectKind, string, bool) {
		typ, name, found := strings.Cut(arg, "/")
		if !found {
			return objectKind{}, "", false
		}
		for _, k := range []objectKind{configMapKind, secretKind, claimKind} {
			if strings.EqualFold(typ, k.plural) || slices.ContainsFunc(k.aliases, func(a string) bool { return strings.EqualFold(typ, a) }) {
				return k, name, true
			}
		}
		return objectKind{}, "", false
	}
	if len(args) == 0 {
		return k, nil, false, nil
	}
	k, _, ok = kindOf(args[0])
	if !ok {
		return k, nil, false, nil
	}
	for _, a := range args {
		ak, name, aok := kindOf(a)
		if !aok || ak.kind != k.kind {
			return k, nil, true, usageErrorf("%q: podvisor shows one resource type at a time (%s/NAME...)", a, k.plural)
		}
		if name == "" || strings.Contains(name, "/") {
			return k, nil, true, usageErrorf("arguments in resource/name form must have a single resource and name")
		}
		names = append(names, name)
	}
	return k, names, true, nil
}
