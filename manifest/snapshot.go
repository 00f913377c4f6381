package manifest

import (
	"cmp"
	"fmt"
	"github.com/podvisor/podvisor/manifest/podfile"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// build assembles the snapshot from the file states: duplicates resolved,
// references checked, permissions checked.
func (s *scanner) build(dirErr *FileError, manifests []entry) Snapshot {
	var (
		cands []candidate
		errs  []*FileError
		warns []*FileError
	)
	if dirErr != nil {
		errs = append(errs, dirErr)
	}
	for _, path := range slices.Sorted(maps.Keys(s.state)) {
		st := s.state[path]
		pods, objs, objErrs := st.pods, st.objs, st.objErrs
		switch {
		case dirErr != nil:
			pods, objs = keepAll(st.lkg, dirErr)
			objErrs = objErrors(objs, dirErr)
		case st.ioErr != nil:
			pods, objs = keepAll(st.lkg, st.ioErr)
			objErrs = objErrors(objs, st.ioErr)
			errs = append(errs, st.ioErr)
		case st.insecure != nil:
			pods, objs = keepAll(st.lkg, st.insecure)
			objErrs = objErrors(objs, st.insecure)
			errs = append(errs, st.insecure)
		default:
			errs = append(errs, st.errs...)
			warns = append(warns, st.warns...)
		}
		if w := secretReadable(path, st); w != nil {
			warns = append(warns, w)
		}
		for _, p := range pods {
			cands = append(cands, candidate{id: "Pod " + p.Key(), path: p.Path, doc: p.Doc, line: p.Line, pod: p})
		}
		for _, o := range objs {
			cands = append(cands, candidate{id: o.ID(), path: o.Path, doc: o.Doc, line: o.Line, obj: o, objErr: objErrs[o.Hash]})
		}
	}

	winners, dupErrs := s.resolve(cands)
	errs = append(errs, dupErrs...)
	snap := Snapshot{}
	objs := map[string]*podfile.Object{}
	for _, c := range winners {
		if c.obj != nil {
			objs[c.id] = c.obj
			snap.Objects = append(snap.Objects, c.obj)
		}
		if c.objErr != nil {
			if snap.ObjectErrors == nil {
				snap.ObjectErrors = map[string]error{}
			}
			snap.ObjectErrors[c.id] = c.objErr
		}
	}
	slices.SortFunc(snap.Objects, func(a, b *Object) int { return strings.Compare(a.ID(), b.ID()) })
	for _, c := range winners {
		switch {
		case c.obj != nil && c.obj.ConfigMap != nil:
			if snap.ConfigMaps == nil {
				snap.ConfigMaps = map[string]*v1.ConfigMap{}
			}
			snap.ConfigMaps[c.obj.Key] = c.obj.ConfigMap
		case c.obj != nil && (c.obj.Claim != nil || c.obj.Volume != nil):
			// Bound below, all together.
		case c.obj != nil:
			if snap.Secrets == nil {
				snap.Secrets = map[string]*v1.Secret{}
			}
			snap.Secrets[c.obj.Key] = c.obj.Secret
		default:
			// A pod waits for what it references, as kubelet's does.
			warns = append(warns, podfile.MissingReferences(c.pod, func(id string) *podfile.Object { return objs[id] })...)
			snap.Pods = append(snap.Pods, c.pod)
		}
	}
	snap.Claims = podfile.BindClaims(snap.Objects, s.nodeName)
	for _, p := range snap.Pods {
		warns = append(warns, podfile.MissingClaims(p, snap.Claims)...)
	}
	var cycleErrs []*FileError
	snap.Pods, cycleErrs = s.refuseCycles(snap.Pods)
	errs = append(errs, cycleErrs...)
	keys := make(map[string]bool, len(snap.Pods))
	for _, p := range snap.Pods {
		keys[p.Key()] = true
	}
	for _, p := range snap.Pods {
		warns = append(warns, missingPods(p, func(k string) bool { return keys[k] })...)
	}
	if s.opts.AllowInsecure {
		// Otherwise insecure files and directories are errors.
		warns = append(warns, s.permissions(manifests)...)
	}

	slices.SortFunc(snap.Pods, func(a, b *Pod) int { return strings.Compare(a.Key(), b.Key()) })
	sortErrors(errs)
	sortErrors(warns)
	snap.Errors, snap.Warnings = errs, warns
	return snap
}

func sortErrors(errs []*FileError) {
	slices.SortStableFunc(errs, func(a, b *FileError) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line))
	})
}

// sameSet compares what a consumer acts on: the pods' UIDs and whether each
// is a kept last-good pod, the errors and the warnings.
func sameSet(a, b Snapshot) bool {
	if len(a.Pods) != len(b.Pods) || len(a.Errors) != len(b.Errors) || len(a.Warnings) != len(b.Warnings) {
		return false
	}
	for i := range a.Pods {
		if a.Pods[i].Hash != b.Pods[i].Hash || (a.Pods[i].Err == nil) != (b.Pods[i].Err == nil) {
			return false
		}
	}
	for i := range a.Errors {
		if a.Errors[i].Error() != b.Errors[i].Error() {
			return false
		}
	}
	for i := range a.Warnings {
		if a.Warnings[i].Error() != b.Warnings[i].Error() {
			return false
		}
	}
	return true
}

// objectsSig is a digest of the ConfigMaps and Secrets of a snapshot, to
// tell a change; unchanged objects keep their pointers.
func objectsSig(snap Snapshot) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(snap.ConfigMaps)) {
		fmt.Fprintf(&b, "cm %s %p\n", k, snap.ConfigMaps[k])
	}
	for _, k := range slices.Sorted(maps.Keys(snap.Secrets)) {
		fmt.Fprintf(&b, "secret %s %p\n", k, snap.Secrets[k])
	}
	for _, k := range slices.Sorted(maps.Keys(snap.Claims)) {
		fmt.Fprintf(&b, "claim %s %v\n", k, snap.Claims[k])
	}
	return b.String()
}

// logNew logs errors and warnings that the previous scan did not have, so a
// relist does not repeat them.
func (s *scanner) logNew(snap Snapshot) {
	errsNow := make(map[string]bool, len(snap.Errors))
	filesNow := map[string]bool{}
	for _, e := range snap.Errors {
		msg := e.Error()
		errsNow[msg] = true
		filesNow[e.Path] = true
		if !s.loggedErrs[msg] {
			s.log.Warn("manifest error", "file", e.Path, "error", msg)
		}
	}
	s.loggedErrs = errsNow
	// A file whose errors are gone and that is still there was fixed (a
	// removed one was not): say so, or its last word in the log would be
	// the error.
	for _, path := range slices.Sorted(maps.Keys(s.errFiles)) {
		if _, present := s.state[path]; present && !filesNow[path] {
			s.log.Info("manifest fixed", "file", path)
		}
	}
	s.errFiles = filesNow

	warnsNow := map[string]bool{}
	logWarn := func(key string, args ...any) {
		warnsNow[key] = true
		if !s.loggedWarns[key] {
			s.log.Warn("manifest warning", args...)
		}
	}
	for _, p := range snap.Pods {
		for _, w := range p.Warnings {
			logWarn(p.Hash+" "+w, "file", p.Path, "pod", p.Key(), "warning", w)
		}
	}
	for _, w := range snap.Warnings {
		logWarn(w.Error(), "file", w.Path, "warning", w.Error())
	}
	s.loggedWarns = warnsNow
}
