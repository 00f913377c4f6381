package daemon

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/manifest/podfile"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// objectsView is the API's view of the manifest source's ConfigMaps and
// Secrets: it observes every snapshot (then passes it on to next) and
// keeps the answer to GET /objects. The API strips Secret values itself.
type objectsView struct {
	next manifest.Observer
	now  func() time.Time

	mu   sync.Mutex
	list api.ObjectList
	seen map[string]time.Time // Object.Hash → when first seen
}

var (
	_ api.ObjectSource  = (*objectsView)(nil)
	_ manifest.Observer = (*objectsView)(nil)
)

func newObjectsView(next manifest.Observer) *objectsView {
	return &objectsView{next: next, now: time.Now, seen: map[string]time.Time{}}
}

// ObserveSnapshot keeps snap's objects for the API.
func (v *objectsView) ObserveSnapshot(snap manifest.Snapshot) {
	v.mu.Lock()
	v.list = v.build(snap)
	v.mu.Unlock()
	if v.next != nil {
		v.next.ObserveSnapshot(snap)
	}
}

// Objects returns the objects of the last snapshot.
func (v *objectsView) Objects() api.ObjectList {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.list
}

// build makes the answer from snap; it is called with v.mu held.
func (v *objectsView) build(snap manifest.Snapshot) api.ObjectList {
	now := v.now()
	seen := make(map[string]time.Time, len(snap.Objects))
	byID := map[string]*manifest.Object{}
	for _, o := range snap.Objects {
		byID[o.ID()] = o
		seen[o.Hash] = cmp.Or(v.seen[o.Hash], now)
	}
	v.seen = seen

	var (
		list  = api.ObjectList{Items: []api.Object{}}
		users = map[string][]api.ObjectReference{}
	)
	for _, p := range snap.Pods {
		ns := p.Pod.Namespace
		for _, r := range podfile.References(p.Pod) {
			ref := api.ObjectReference{Pod: p.Key(), Kind: r.Kind, Name: r.Name, Field: r.Field, Key: r.Key, Optional: r.Optional, ImagePull: r.Pull}
			o := byID[r.ID(ns)]
			if o == nil {
				list.Missing = append(list.Missing, ref)
				continue
			}
			ref.Exists, ref.KeyMissing = true, r.Key != "" && !o.HasKey(r.Key)
			users[o.ID()] = append(users[o.ID()], ref)
		}
		for _, r := range podfile.ClaimReferences(p.Pod) {
			ref := api.ObjectReference{Pod: p.Key(), Kind: "PersistentVolumeClaim", Name: r.Claim, Field: r.Field}
			id := "PersistentVolumeClaim " + ns + "/" + r.Claim
			if byID[id] == nil {
				list.Missing = append(list.Missing, ref)
				continue
			}
			ref.Exists = true
			users[id] = append(users[id], ref)
		}
	}
	fileErrs := map[string][]string{}
	for _, e := range snap.Errors {
		fileErrs[e.Path] = append(fileErrs[e.Path], e.Error())
	}
	for _, o := range snap.Objects {
		ns, name, _ := strings.Cut(o.Key, "/")
		item := api.Object{Kind: o.Kind, Namespace: ns, Name: name, File: o.Path, Line: o.Line,
			Errors: fileErrs[o.Path], UsedBy: users[o.ID()]}
		if err := snap.ObjectErrors[o.ID()]; err != nil {
			item.Error = err.Error()
		}
		for _, w := range o.Warnings {
			item.Warnings = append(item.Warnings, w.Error())
		}
		created := metav1.NewTime(seen[o.Hash])
		switch {
		case o.ConfigMap != nil:
			cm := o.ConfigMap.DeepCopy()
			cm.APIVersion, cm.Kind, cm.CreationTimestamp = "v1", "ConfigMap", created
			item.ConfigMap = cm
		case o.Claim != nil:
			item.PersistentVolumeClaim = claimView(o.Claim, snap.Claims[o.Key], created)
		case o.Volume != nil:
			item.Namespace, item.Name = "", o.Key
			pv := o.Volume.DeepCopy()
			pv.APIVersion, pv.Kind, pv.CreationTimestamp = "v1", "PersistentVolume", created
			item.PersistentVolume = pv
		default:
			// The API strips its values; the source's Secret is shared
			// with the pod workers and is not copied here.
			s := *o.Secret
			s.APIVersion, s.Kind, s.CreationTimestamp = "v1", "Secret", created
			item.Secret = &s
		}
		list.Items = append(list.Items, item)
	}
	slices.SortStableFunc(list.Missing, func(a, b api.ObjectReference) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Pod, b.Pod), strings.Compare(a.Name, b.Name))
	})
	return list
}
