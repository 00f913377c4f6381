package cli

import (
	"fmt"
	"strings"

	"github.com/podvisor/podvisor/status"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// podTypes are the names kubectl gives the pod resource type in a
// TYPE/NAME argument.
var podTypes = map[string]bool{"pod": true, "pods": true, "po": true}

// podName is the pod a NAME or TYPE/NAME argument names, as kubectl reads
// it: "pod/web", "pods/web" and "po/web" are the pod web; another type is
// kubectl's error for a resource type the server does not have (podvisor
// serves only pods). The namespace is -n's, never the argument's.
func podName(arg string) (string, error) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok {
		return arg, nil
	}
	if !podTypes[strings.ToLower(typ)] {
		return "", usageErrorf("the server doesn't have a resource type %q", typ)
	}
	if name == "" || strings.Contains(name, "/") {
		return "", usageErrorf("arguments in resource/name form must have a single resource and name")
	}
	return name, nil
}

// typeNameArgs checks the arguments of a verb given none of its
// subcommands (kubectl get pod/web): each must be TYPE/NAME of a pod; a
// bare word is an unknown subcommand.
func typeNameArgs(cmd *cobra.Command, args []string) error {
	for _, a := range args {
		if _, err := podName(a); err != nil {
			return err
		}
		if !strings.Contains(a, "/") {
			return usageErrorf("unknown command %q for %q", a, cmd.CommandPath())
		}
	}
	return nil
}

// podSelection is how a verb narrows the pods it shows, as kubectl's
// -n/--namespace, -A/--all-namespaces and -l/--selector do. podvisor's
// default is every namespace (a node's static pods live in several).
type podSelection struct {
	namespace     string
	allNamespaces bool
	selector      string
}

// addNamespaceFlag adds -n/--namespace.
func (s *podSelection) addNamespaceFlag(fs *pflag.FlagSet) {
	fs.StringVarP(&s.namespace, "namespace", "n", "", "only pods (or events) of this namespace (default: all namespaces)")
}

// addFlags adds -n, -A and -l.
func (s *podSelection) addFlags(fs *pflag.FlagSet) {
	s.addNamespaceFlag(fs)
	fs.BoolVarP(&s.allNamespaces, "all-namespaces", "A", false, "every namespace (podvisor's default too), with a NAMESPACE column")
	fs.StringVarP(&s.selector, "selector", "l", "", "label selector to filter on, as kubectl's (-l app=web,tier!=db; 'env in (a,b)'), applied by the client")
}

// ns is the namespace to keep: "" for all (-A wins over -n, as in kubectl).
func (s *podSelection) ns() string {
	if s.allNamespaces {
		return ""
	}
	return s.namespace
}

// matcher returns whether a pod is selected by the namespace, the
// selector and the names (a pod's full name or its manifest's name; none:
// every pod). A bad selector or name is a usage error.
func (s *podSelection) matcher(args []string) (func(*v1.Pod) bool, error) {
	sel := labels.Everything()
	if s.selector != "" {
		var err error
		if sel, err = labels.Parse(s.selector); err != nil {
			return nil, usageErrorf("-l/--selector %q: %v", s.selector, err)
		}
	}
	names, err := podNames(args)
	if err != nil {
		return nil, err
	}
	ns := s.ns()
	return func(p *v1.Pod) bool {
		if ns != "" && p.Namespace != ns || !sel.Matches(labels.Set(p.Labels)) {
			return false
		}
		if len(names) == 0 {
			return true
		}
		for _, n := range names {
			if p.Name == n || p.Annotations[status.ManifestNameAnnotation] == n {
				return true
			}
		}
		return false
	}, nil
}

// filter keeps the pods of list the selection and names select, in their
// order; names go through the API's lookup (a full name first, else a
// manifest name), name by name. It returns an error naming the pods when
// names were given and none is found.
func (s *podSelection) filter(items []v1.Pod, args []string) ([]v1.Pod, error) {
	match, err := s.matcher(nil)
	if err != nil {
		return nil, err
	}
	names, err := podNames(args)
	if err != nil {
		return nil, err
	}
	var keep []v1.Pod
	if len(names) == 0 {
		for i := range items {
			if match(&items[i]) {
				keep = append(keep, items[i])
			}
		}
		return keep, nil
	}
	want := map[types.UID]bool{}
	for _, n := range names {
		for _, p := range status.FindPods(items, n, s.ns()) {
			want[p.UID] = true
		}
	}
	for i := range items {
		if want[items[i].UID] && match(&items[i]) {
			keep = append(keep, items[i])
		}
	}
	if len(keep) == 0 {
		return nil, exitf(1, "pod %q not found%s", strings.Join(names, ", "), s.where())
	}
	return keep, nil
}

// where says where pods were looked for, for "not found" messages.
func (s *podSelection) where() string {
	if ns := s.ns(); ns != "" {
		return fmt.Sprintf(" in namespace %q", ns)
	}
	return ""
}

// qualified is a pod name as the API's lookup takes it: "namespace/name"
// with -n.
func (s *podSelection) qualified(name string) string {
	if ns := s.ns(); ns != "" {
		return ns + "/" + name
	}
	return name
}

func podNames(args []string) ([]string, error) {
	var names []string
	for _, a := range args {
		n, err := podName(a)
		if err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, nil
}
