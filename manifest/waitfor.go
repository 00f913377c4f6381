package manifest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/podvisor/podvisor/manifest/podfile"
)

// Ordering between pods (podfile.AnnotationWaitFor) is checked across
// files: a cycle refuses every pod on it, as a duplicate name refuses the
// loser; a name no manifest defines is only a warning, as the file may
// come later.

// refuseCycles takes out the pods that wait for themselves through
// AnnotationWaitFor, each with an error naming the cycle and its files. A
// pod on a cycle that the previous snapshot had keeps that version (its
// last good one, marked with the error) unless the cycle remains with it;
// one without a previous version, or still on a cycle with it, is not run.
func (s *scanner) refuseCycles(pods []*Pod) ([]*Pod, []*FileError) {
	cycles := waitCycles(pods)
	if len(cycles) == 0 {
		return pods, nil
	}
	var errs []*FileError
	for _, p := range pods {
		if e := cycles[p.Key()]; e != nil {
			errs = append(errs, e)
		}
	}
	prev := map[string]*Pod{}
	if s.prev != nil {
		for _, p := range s.prev.Pods {
			prev[p.Key()] = p
		}
	}
	kept := map[string]bool{}
	for len(cycles) > 0 {
		out := make([]*Pod, 0, len(pods))
		for _, p := range pods {
			e, key := cycles[p.Key()], p.Key()
			switch {
			case e == nil:
				out = append(out, p)
			case !kept[key] && prev[key] != nil:
				kept[key] = true
				out = append(out, withErr([]*Pod{prev[key]}, e)...)
			}
		}
		pods = out
		cycles = waitCycles(pods)
	}
	return pods, errs
}

// waitCycles returns an error for each pod (by Key) that waits for itself,
// directly or through other pods of pods.
func waitCycles(pods []*Pod) map[string]*FileError {
	byKey := make(map[string]*Pod, len(pods))
	for _, p := range pods {
		byKey[p.Key()] = p
	}
	next := func(key string) []string {
		var out []string
		for _, k := range podfile.WaitForKeys(byKey[key].Pod) {
			if byKey[k] != nil {
				out = append(out, k)
			}
		}
		return out
	}
	var cycles map[string]*FileError
	for _, p := range pods {
		path := cycleFrom(p.Key(), next)
		if path == nil {
			continue
		}
		steps := make([]string, 0, len(path)+1)
		for _, k := range path {
			q := byKey[k]
			steps = append(steps, fmt.Sprintf("%s (%s)", manifestName(q), q.Path))
		}
		steps = append(steps, manifestName(p))
		line := p.Line
		if l := p.RefLines[podfile.WaitForField]; l > 0 {
			line = l
		}
		if cycles == nil {
			cycles = map[string]*FileError{}
		}
		cycles[p.Key()] = &FileError{
			Path: p.Path, Line: line, Field: podfile.WaitForField, Err: podfile.ErrWaitCycle,
			Reason: "pods wait for each other in a cycle, so none would ever start: " + strings.Join(steps, " waits for ") + "; this version is refused",
		}
	}
	return cycles
}

// cycleFrom returns the shortest path of keys from start back to start
// (start first, not repeated at the end), or nil when there is none.
func cycleFrom(start string, next func(string) []string) []string {
	from := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		for _, n := range next(k) {
			if n == start {
				path := []string{k}
				for k != start {
					k = from[k]
					path = append(path, k)
				}
				slices.Reverse(path)
				return path
			}
			if _, seen := from[n]; !seen {
				from[n] = k
				queue = append(queue, n)
			}
		}
	}
	return nil
}

// missingPods warns about each pod p waits for that exists does not
// know: p waits for it.
func missingPods(p *Pod, exists func(key string) bool) []*FileError {
	var out []*FileError
	names := podfile.WaitFor(p.Pod)
	for i, k := range podfile.WaitForKeys(p.Pod) {
		if exists(k) {
			continue
		}
		line := p.Line
		if l := p.RefLines[podfile.WaitForField]; l > 0 {
			line = l
		}
		out = append(out, &FileError{
			Path: p.Path, Line: line, Field: podfile.WaitForField, Err: podfile.ErrMissingPod,
			Reason: fmt.Sprintf("pod %s/%s is not defined in the manifest directory; the containers of this pod wait until it is, and Ready", p.Pod.Namespace, names[i]),
		})
	}
	return out
}

// manifestName is the pod's name in its manifest, without "-<node>".
func manifestName(p *Pod) string {
	return strings.TrimSuffix(p.Pod.Name, "-"+p.Pod.Spec.NodeName)
}
