package manifest

import (
	"github.com/podvisor/podvisor/manifest/podfile"
	"maps"
	"slices"
)

// docGood is the last valid content of one document.
type docGood struct {
	pods []*Pod
	objs []*podfile.Object
}

// apply makes a new parse of a file take effect, document by document: a
// valid document replaces that index's last good content, an invalid one
// keeps it (its pods marked with the document's first error). An error of
// the whole file (too large, empty) keeps every document's last good content.
func (s *scanner) apply(path string, st *fileState, res fileResult) {
	st.errs, st.warns, st.objErrs = nil, nil, nil
	st.errs = append(st.errs, res.Errors...)
	for _, d := range res.Docs {
		st.errs = append(st.errs, d.Errors...)
		st.warns = append(st.warns, d.Warnings...)
	}
	if len(res.Errors) > 0 {
		st.pods, st.objs = keepAll(st.lkg, res.Errors[0])
		st.objErrs = objErrors(st.objs, res.Errors[0])
		return
	}

	// Keep the pod objects of unchanged documents, so consumers see the same
	// *Pod (and config.seen) until the content really changes.
	oldPods := map[string]*Pod{}
	oldObjs := map[string]*podfile.Object{}
	for _, g := range st.lkg {
		for _, p := range g.pods {
			oldPods[p.Hash] = p
		}
		for _, o := range g.objs {
			oldObjs[o.Hash] = o
		}
	}
	lkg := map[int]*docGood{}
	var (
		pods  []*Pod
		objs  []*podfile.Object
		taken = map[string]bool{}
	)
	for _, d := range res.Docs {
		if len(d.Errors) > 0 {
			continue
		}
		g := &docGood{}
		for _, p := range d.Pods {
			if o, ok := oldPods[p.Hash]; ok && o.Doc == p.Doc {
				p = o
			}
			g.pods = append(g.pods, p)
			taken["Pod "+p.Key()] = true
		}
		for _, o := range d.Objects {
			if old, ok := oldObjs[o.Hash]; ok && old.Doc == o.Doc {
				o = old
			}
			g.objs = append(g.objs, o)
			taken[o.ID()] = true
		}
		lkg[d.Index] = g
		pods = append(pods, g.pods...)
		objs = append(objs, g.objs...)
	}
	for _, d := range res.Docs {
		g := st.lkg[d.Index]
		if len(d.Errors) == 0 || g == nil {
			continue
		}
		lkg[d.Index] = g
		// A valid document naming the same pod (documents moved around)
		// takes precedence over a kept one.
		for _, p := range withErr(g.pods, d.Errors[0]) {
			if !taken["Pod "+p.Key()] {
				pods = append(pods, p)
			}
		}
		for _, o := range g.objs {
			if !taken[o.ID()] {
				objs = append(objs, o)
				if st.objErrs == nil {
					st.objErrs = map[string]error{}
				}
				st.objErrs[o.Hash] = d.Errors[0]
			}
		}
	}
	st.lkg, st.pods, st.objs = lkg, pods, objs
}

// keepAll returns every last good pod marked with err, and the objects.
func keepAll(lkg map[int]*docGood, err error) ([]*Pod, []*podfile.Object) {
	var (
		pods []*Pod
		objs []*podfile.Object
	)
	for _, i := range slices.Sorted(maps.Keys(lkg)) {
		pods = append(pods, withErr(lkg[i].pods, err)...)
		objs = append(objs, lkg[i].objs...)
	}
	return pods, objs
}

// withErr returns copies of the last good pods marked with err; the
// originals, already handed out, are not touched.
func withErr(good []*Pod, err error) []*Pod {
	out := make([]*Pod, 0, len(good))
	for _, p := range good {
		c := *p
		c.Err = err
		out = append(out, &c)
	}
	return out
}

// objErrors marks every object as a kept last good one, with err.
func objErrors(objs []*podfile.Object, err error) map[string]error {
	m := make(map[string]error, len(objs))
	for _, o := range objs {
		m[o.Hash] = err
	}
	return m
}
