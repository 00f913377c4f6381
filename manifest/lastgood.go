package manifest

import (
	"maps"
	"slices"
)

// docGood is the last valid content of one document.
type docGood struct {
	pods []*Pod
	objs []*object
}

// apply makes a new parse of a file take effect, document by document: a
// valid document replaces that index's last good content, an invalid one
// keeps it (its pods marked with the document's first error). An error of
// the whole file (too large, empty) keeps every document's last good content.
func (s *scanner) apply(path string, st *fileState, res fileResult) {
	st.errs, st.warns = nil, nil
	st.errs = append(st.errs, res.errs...)
	for _, d := range res.docs {
		st.errs = append(st.errs, d.errs...)
		st.warns = append(st.warns, d.warns...)
	}
	if len(res.errs) > 0 {
		st.pods, st.objs = keepAll(st.lkg, res.errs[0])
		return
	}

	// Keep the pod objects of unchanged documents, so consumers see the same
	// *Pod (and config.seen) until the content really changes.
	oldPods := map[string]*Pod{}
	oldObjs := map[string]*object{}
	for _, g := range st.lkg {
		for _, p := range g.pods {
			oldPods[p.Hash] = p
		}
		for _, o := range g.objs {
			oldObjs[o.hash] = o
		}
	}
	lkg := map[int]*docGood{}
	var (
		pods  []*Pod
		objs  []*object
		taken = map[string]bool{}
	)
	for _, d := range res.docs {
		if len(d.errs) > 0 {
			continue
		}
		g := &docGood{}
		for _, p := range d.pods {
			if o, ok := oldPods[p.Hash]; ok && o.Doc == p.Doc {
				p = o
			}
			g.pods = append(g.pods, p)
			taken["Pod "+p.Key()] = true
		}
		for _, o := range d.objs {
			if old, ok := oldObjs[o.hash]; ok && old.doc == o.doc {
				o = old
			}
			g.objs = append(g.objs, o)
			taken[o.id()] = true
		}
		lkg[d.index] = g
		pods = append(pods, g.pods...)
		objs = append(objs, g.objs...)
	}
	for _, d := range res.docs {
		g := st.lkg[d.index]
		if len(d.errs) == 0 || g == nil {
			continue
		}
		lkg[d.index] = g
		// A valid document naming the same pod (documents moved around)
		// takes precedence over a kept one.
		for _, p := range withErr(g.pods, d.errs[0]) {
			if !taken["Pod "+p.Key()] {
				pods = append(pods, p)
			}
		}
		for _, o := range g.objs {
			if !taken[o.id()] {
				objs = append(objs, o)
			}
		}
	}
	st.lkg, st.pods, st.objs = lkg, pods, objs
}

// keepAll returns every last good pod marked with err, and the objects.
func keepAll(lkg map[int]*docGood, err error) ([]*Pod, []*object) {
	var (
		pods []*Pod
		objs []*object
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
