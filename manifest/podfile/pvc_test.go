package podfile

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func parseObjects(t *testing.T, data string) ([]*Object, string) {
	t.Helper()
	res := ParseDocuments("/m/x.yaml", []byte(data), node, time.Unix(0, 0), Options{})
	var objs []*Object
	var errs []*FileError
	for _, d := range res.Docs {
		objs = append(objs, d.Objects...)
		errs = append(errs, d.Errors...)
	}
	return objs, joinErrs(errs)
}

func TestClaimValidation(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"good", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: d}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n", ""},
		{"no access modes", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: d}\nspec:\n  resources: {requests: {storage: 1Gi}}\n",
			"/m/x.yaml:4: spec.accessModes: Required value"},
		{"no storage", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: d}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {}}\n",
			"spec.resources.requests.storage: Required value"},
		{"bad reclaim policy", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: d, annotations: {podvisor.io/reclaim-policy: Recycle}}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n",
			`metadata.annotations.podvisor.io/reclaim-policy: Unsupported value: "Recycle"`},
		{"block", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: d}\nspec:\n  volumeMode: Block\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n", ""},
		{"nfs volume", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: v}\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  nfs: {server: x, path: /x}\n",
			"/m/x.yaml:7: spec.nfs: not supported"},
		{"local volume without nodeAffinity", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: v}\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  local: {path: /x}\n",
			"spec.nodeAffinity: Required value: Local volume requires node affinity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := parseObjects(t, tc.doc)
			if tc.want == "" && errs != "" || !strings.Contains(errs, tc.want) {
				t.Errorf("errors:\n%s\nwant %q", errs, tc.want)
			}
		})
	}
}

func TestBindClaims(t *testing.T) {
	const docs = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: dyn, annotations: {podvisor.io/reclaim-policy: Delete}}
spec: {accessModes: [ReadWriteOncePod], resources: {requests: {storage: 8Mi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: named, namespace: ns}
spec: {volumeName: big, storageClassName: "", accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: matched}
spec: {storageClassName: slow, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: none}
spec: {storageClassName: "", accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: toosmall}
spec: {volumeName: small, storageClassName: "", accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: big}
spec: {capacity: {storage: 5Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /srv/big, type: DirectoryOrCreate}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: small}
spec: {capacity: {storage: 1Mi}, accessModes: [ReadWriteOnce], hostPath: {path: /srv/small}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: slow}
spec:
  storageClassName: slow
  capacity: {storage: 2Gi}
  accessModes: [ReadWriteOnce]
  local: {path: /srv/slow}
  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [node-1]}]}]}}
`
	objs, errs := parseObjects(t, docs)
	if errs != "" {
		t.Fatal(errs)
	}
	got := BindClaims(objs, node)
	for key, want := range map[string]ClaimBinding{
		"default/dyn":      {Dir: "default_dyn", Delete: true, Request: 8 << 20, OncePod: true},
		"ns/named":         {Volume: "big", Path: "/srv/big", HostPath: true, HostPathType: "DirectoryOrCreate"},
		"default/matched":  {Volume: "slow", Path: "/srv/slow"},
		"default/none":     {Unbound: "PVC is not bound", Detail: `no PersistentVolume document matches it, and storageClassName "" asks for no provisioning`},
		"default/toosmall": {Unbound: "PVC is not bound", Detail: `cannot bind to requested volume "small": requested PV is too small`},
	} {
		if got[key] != want {
			t.Errorf("%s: got %+v, want %+v", key, got[key], want)
		}
	}
	if msg := ClaimError("default", "gone", ClaimBinding{}, false); msg != `error processing PVC default/gone: failed to fetch PVC from API server: persistentvolumeclaims "gone" not found` {
		t.Errorf("missing claim: %s", msg)
	}
	// Another node: the local volume's nodeAffinity does not match.
	if b := BindClaims(objs, "node-2")["default/matched"]; b.Volume != "" || b.Dir != "default_matched" {
		t.Errorf("on another node: %+v", b)
	}
}

func TestClaimDir(t *testing.T) {
	if d := ClaimDir("ns", "data-0"); d != "ns_data-0" {
		t.Errorf("ClaimDir = %q", d)
	}
}

func TestFindVolume(t *testing.T) {
	type pvOpt func(*v1.PersistentVolume)
	pv := func(name, size string, opts ...pvOpt) *v1.PersistentVolume {
		v := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		}}
		for _, o := range opts {
			o(v)
		}
		return v
	}
	claimRef := func(ns, name, uid string) pvOpt {
		return func(v *v1.PersistentVolume) {
			v.Spec.ClaimRef = &v1.ObjectReference{Namespace: ns, Name: name, UID: types.UID(uid)}
		}
	}
	class := func(c string) pvOpt { return func(v *v1.PersistentVolume) { v.Spec.StorageClassName = c } }
	betaClass := func(c string) pvOpt {
		return func(v *v1.PersistentVolume) {
			v.Annotations = map[string]string{v1.BetaStorageClassAnnotation: c}
		}
	}
	block := func(v *v1.PersistentVolume) { m := v1.PersistentVolumeBlock; v.Spec.VolumeMode = &m }
	modes := func(m ...v1.PersistentVolumeAccessMode) pvOpt {
		return func(v *v1.PersistentVolume) { v.Spec.AccessModes = m }
	}
	labelled := func(k, val string) pvOpt {
		return func(v *v1.PersistentVolume) { v.Labels = map[string]string{k: val} }
	}
	affinity := func(req v1.NodeSelectorRequirement, fields bool) pvOpt {
		return func(v *v1.PersistentVolume) {
			term := v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{req}}
			if fields {
				term = v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{req}}
			}
			v.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{term}}}
		}
	}
	onHost := func(h string) pvOpt {
		return affinity(v1.NodeSelectorRequirement{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{h}}, false)
	}
	deleting := func(v *v1.PersistentVolume) { v.DeletionTimestamp = &metav1.Time{} }
	vac := func(v *v1.PersistentVolume) { s := "gold"; v.Spec.VolumeAttributesClassName = &s }

	type claimOpt func(*v1.PersistentVolumeClaim)
	claim := func(size string, opts ...claimOpt) *v1.PersistentVolumeClaim {
		c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "uid-1"}, Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		}}
		for _, o := range opts {
			o(c)
		}
		return c
	}
	claimClassed := func(s string) claimOpt {
		return func(c *v1.PersistentVolumeClaim) { c.Spec.StorageClassName = &s }
	}
	claimBeta := func(s string) claimOpt {
		return func(c *v1.PersistentVolumeClaim) {
			c.Annotations = map[string]string{v1.BetaStorageClassAnnotation: s}
		}
	}
	claimBlock := func(c *v1.PersistentVolumeClaim) { m := v1.PersistentVolumeBlock; c.Spec.VolumeMode = &m }
	claimModes := func(m ...v1.PersistentVolumeAccessMode) claimOpt {
		return func(c *v1.PersistentVolumeClaim) { c.Spec.AccessModes = m }
	}
	selecting := func(s *metav1.LabelSelector) claimOpt {
		return func(c *v1.PersistentVolumeClaim) { c.Spec.Selector = s }
	}
	filesystem := func(v *v1.PersistentVolume) { m := v1.PersistentVolumeFilesystem; v.Spec.VolumeMode = &m }

	node1 := map[string]string{v1.LabelHostname: "node-1", v1.LabelOSStable: "linux"}
	for _, tc := range []struct {
		name    string
		claim   *v1.PersistentVolumeClaim
		vols    []*v1.PersistentVolume
		taken   string
		want    string
		wantErr string
	}{
		{name: "smallest fit", claim: claim("1500Mi"),
			vols: []*v1.PersistentVolume{pv("a", "5Gi"), pv("b", "1Gi"), pv("c", "2Gi"), pv("d", "3Gi")}, want: "c"},
		{name: "first among equals", claim: claim("1Gi"),
			vols: []*v1.PersistentVolume{pv("a", "2Gi"), pv("b", "2Gi")}, want: "a"},
		{name: "exact size", claim: claim("1Gi"), vols: []*v1.PersistentVolume{pv("a", "1024Mi")}, want: "a"},
		{name: "too small", claim: claim("1Gi"), vols: []*v1.PersistentVolume{pv("a", "1023Mi")}},
		{name: "taken", claim: claim("1Gi"), vols: []*v1.PersistentVolume{pv("a", "1Gi"), pv("b", "5Gi")}, taken: "a", want: "b"},
		{name: "pre-bound wins over a smaller one", claim: claim("1Gi"),
			vols: []*v1.PersistentVolume{pv("a", "1Gi"), pv("b", "9Gi", claimRef("ns", "data", ""))}, want: "b"},
		{name: "pre-bound with the claim's UID", claim: claim("1Gi"),
			vols: []*v1.PersistentVolume{pv("a", "1Gi"), pv("b", "9Gi", claimRef("ns", "data", "uid-1"))}, want: "b"},
		{name: "pre-bound ignores class and access modes", claim: claim("1Gi", claimClassed("fast"), claimModes(v1.ReadWriteMany)),
			vols: []*v1.PersistentVolume{pv("b", "9Gi", claimRef("ns", "data", ""), class("slow"))}, want: "b"},
		{name: "bound to another UID", claim: claim("1Gi"),
			vols: []*v1.PersistentVolume{pv("a", "5Gi"), pv("b", "1Gi", claimRef("ns", "data", "uid-2"))}, want: "a"},
		{name: "bound to another claim", claim: claim("1Gi"),
			vols: []*v1.PersistentVolume{pv("a", "1Gi", claimRef("ns", "other", "")), pv("b", "1Gi", claimRef("other", "data", ""))}},
		{name: "pre-bound but too small", claim: claim("1Gi"),
			vols: []*v1.PersistentVolume{pv("a", "5Gi"), pv("b", "1Mi", claimRef("ns", "data", ""))}, want: "a"},
		{name: "pre-bound to another node matches nothing", claim: claim("1Gi"),
			vols: []*v1.PersistentVolume{pv("a", "5Gi"), pv("b", "1Gi", claimRef("ns", "data", ""), onHost("node-2"))}},
		{name: "class mismatch", claim: claim("1Gi", claimClassed("fast")),
			vols: []*v1.PersistentVolume{pv("a", "1Gi", class("slow")), pv("b", "1Gi")}},
		{name: "class match", claim: claim("1Gi", claimClassed("fast")),
			vols: []*v1.PersistentVolume{pv("a", "1Gi", class("slow")), pv("b", "2Gi", class("fast"))}, want: "b"},
		{name: "no class wants a volume without one", claim: claim("1Gi"),
			vols: []*v1.PersistentVolume{pv("a", "1Gi", class("slow")), pv("b", "2Gi")}, want: "b"},
		{name: "beta annotation on the claim wins", claim: claim("1Gi", claimClassed("fast"), claimBeta("slow")),
			vols: []*v1.PersistentVolume{pv("a", "1Gi", class("fast")), pv("b", "2Gi", class("slow"))}, want: "b"},
		{name: "beta annotation on the volume wins", claim: claim("1Gi", claimClassed("fast")),
			vols: []*v1.PersistentVolume{pv("a", "1Gi", class("fast"), betaClass("slow")), pv("b", "2Gi", class("slow"), betaClass("fast"))}, want: "b"},
		{name: "mode mismatch", claim: claim("1Gi"), vols: []*v1.PersistentVolume{pv("a", "1Gi", block)}},
		{name: "mode mismatch block claim", claim: claim("1Gi", claimBlock), vols: []*v1.PersistentVolume{pv("a", "1Gi")}},
		{name: "unset mode is Filesystem", claim: claim("1Gi"), vols: []*v1.PersistentVolume{pv("a", "1Gi", filesystem)}, want: "a"},
		{name: "access mode missing", claim: claim("1Gi", claimModes(v1.ReadWriteMany)), vols: []*v1.PersistentVolume{pv("a", "1Gi")}},
		{name: "access modes all offered", claim: claim("1Gi", claimModes(v1.ReadWriteOnce, v1.ReadOnlyMany)),
			vols: []*v1.PersistentVolume{pv("a", "1Gi", modes(v1.ReadWriteOnce)), pv("b", "2Gi", modes(v1.ReadOnlyMany, v1.ReadWriteMany, v1.ReadWriteOnce))}, want: "b"},
		{name: "selector", claim: claim("1Gi", selecting(&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}})),
			vols: []*v1.PersistentVolume{pv("a", "1Gi"), pv("b", "1Gi", labelled("tier", "web")), pv("c", "3Gi", labelled("tier", "db"))}, want: "c"},
		{name: "selector expression", claim: claim("1Gi", selecting(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web"}}}})),
			vols: []*v1.PersistentVolume{pv("b", "1Gi", labelled("tier", "web")), pv("c", "3Gi")}, want: "c"},
		{name: "invalid selector", claim: claim("1Gi", selecting(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}})),
			vols: []*v1.PersistentVolume{pv("a", "1Gi")}, wantErr: "invalid selector of claim ns/data"},
		{name: "node affinity this node", claim: claim("1Gi"),
			vols: []*v1.PersistentVolume{pv("a", "1Gi", onHost("node-2")), pv("b", "2Gi", onHost("node-1"))}, want: "b"},
		{name: "node affinity os label", claim: claim("1Gi"),
			vols: []*v1.PersistentVolume{pv("a", "1Gi", affinity(v1.NodeSelectorRequirement{Key: v1.LabelOSStable, Operator: v1.NodeSelectorOpIn, Values: []string{"linux"}}, false))}, want: "a"},
		{name: "node affinity fields unchecked", claim: claim("1Gi"),
			vols: []*v1.PersistentVolume{pv("a", "1Gi", affinity(v1.NodeSelectorRequirement{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"node-2"}}, true))}, want: "a"},
		{name: "node affinity that does not parse", claim: claim("1Gi"),
			vols: []*v1.PersistentVolume{pv("a", "1Gi", affinity(v1.NodeSelectorRequirement{Key: v1.LabelHostname, Operator: "Near", Values: []string{"node-1"}}, false))}},
		{name: "being deleted", claim: claim("1Gi"), vols: []*v1.PersistentVolume{pv("a", "1Gi", deleting), pv("b", "2Gi")}, want: "b"},
		{name: "attributes class", claim: claim("1Gi"), vols: []*v1.PersistentVolume{pv("a", "1Gi", vac)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			taken := map[string]*v1.PersistentVolume{}
			if tc.taken != "" {
				taken[tc.taken] = nil
			}
			v, err := findVolume(tc.claim, tc.vols, node1, taken)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if v != nil {
				got = v.Name
			}
			if got != tc.want {
				t.Errorf("got volume %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVolumeMismatch(t *testing.T) {
	slow := "slow"
	c := &v1.PersistentVolumeClaim{Spec: v1.PersistentVolumeClaimSpec{
		StorageClassName: &slow,
		AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	block := v1.PersistentVolumeBlock
	for _, tc := range []struct {
		name string
		spec v1.PersistentVolumeSpec
		want string
	}{
		{"fits", v1.PersistentVolumeSpec{StorageClassName: "slow", AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadWriteMany}}, ""},
		{"small", v1.PersistentVolumeSpec{StorageClassName: "slow", Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Mi")}}, "requested PV is too small"},
		{"class", v1.PersistentVolumeSpec{StorageClassName: "fast"}, "storageClassName does not match"},
		{"mode", v1.PersistentVolumeSpec{StorageClassName: "slow", VolumeMode: &block}, "incompatible volumeMode"},
		{"access", v1.PersistentVolumeSpec{StorageClassName: "slow", AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadOnlyMany}}, "incompatible accessMode"},
	} {
		v := &v1.PersistentVolume{Spec: tc.spec}
		if v.Spec.Capacity == nil {
			v.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("2Gi")}
		}
		if got := volumeMismatch(c, v); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
