package podfile

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/apis/core"
	corev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
)

// Local persistent volumes. A PersistentVolumeClaim document beside a pod
// is a claim on this machine's storage: it binds, as Kubernetes' binder
// does, to a PersistentVolume document (a local or hostPath path) that
// matches it, and otherwise to a directory podvisor provisions for it
// under its volumes directory, named <namespace>_<name> so that it
// survives edits of the claim, of its pods and of podvisor itself, the
// way rancher's local-path-provisioner names its directories (without
// the claim's UID, which a static manifest does not keep).

// AnnotationReclaimPolicy on a PersistentVolumeClaim says what happens to
// the directory podvisor provisioned for it when the claim's document is
// removed: "Retain" (the default: the data stays, and a claim of the same
// namespace and name finds it again) or "Delete" (the directory is
// removed once no pod uses it). A claim bound to a PersistentVolume
// document never removes that volume's path.
const AnnotationReclaimPolicy = "podvisor.io/reclaim-policy"

// ErrMissingClaim is wrapped by the warnings about a PersistentVolumeClaim
// a pod uses that is not defined or not bound: the pod is accepted and
// waits, as kubelet's does.
var ErrMissingClaim = fmt.Errorf("missing or unbound PersistentVolumeClaim: %w", ErrMissingObject)

// ClaimBinding is where a PersistentVolumeClaim's data lives. It is a
// comparable value: two equal bindings are the same storage.
type ClaimBinding struct {
	// Volume is the PersistentVolume document the claim is bound to; ""
	// when podvisor provisions the claim's directory.
	Volume string
	// Dir is the provisioned directory's name under the volumes
	// directory ("<namespace>_<name>"); "" for a PersistentVolume.
	Dir string
	// Path is a PersistentVolume's local.path or hostPath.path.
	Path string
	// HostPath says the PersistentVolume is a hostPath one (its type in
	// HostPathType): kubelet checks its type and never gives it a
	// pod's fsGroup; a local one must be an existing directory, and
	// gets the fsGroup.
	HostPath     bool
	HostPathType v1.HostPathType
	// Delete says the directory goes when the claim's document does
	// (AnnotationReclaimPolicy Delete); provisioned claims only.
	Delete bool
	// Request is the claim's resources.requests.storage in bytes (0:
	// none), enforced on provisioned directories by a project quota.
	Request int64
	// OncePod says the claim's accessModes hold ReadWriteOncePod: one pod
	// at a time uses it.
	OncePod bool
	// Block says the claim and its PersistentVolume are of volumeMode
	// Block: Path is a block device, which containers get through
	// volumeDevices, never volumeMounts.
	Block bool
	// Unbound is kubelet's reason why the claim cannot be used yet ("PVC
	// is not bound"); the fields above are then empty. Detail says why
	// the binder left it unbound.
	Unbound, Detail string
}

// validateClaim defaults and validates a PersistentVolumeClaim document as
// the apiserver does on create (ValidatePersistentVolumeClaim: access
// modes, resources.requests.storage, volumeMode, selector, ...), and adds
// what podvisor cannot do: a dataSource, a volumeAttributesClassName, and
// a reclaim-policy annotation other than Retain or Delete.
func validateClaim(pvc *v1.PersistentVolumeClaim, p *problems) {
	defaultNamespace(&pvc.ObjectMeta)
	corev1.SetObjectDefaults_PersistentVolumeClaim(pvc)
	var in core.PersistentVolumeClaim
	if err := corev1.Convert_v1_PersistentVolumeClaim_To_core_PersistentVolumeClaim(pvc, &in, nil); err != nil {
		p.invalid("", "convert to the internal PersistentVolumeClaim type for validation: "+err.Error())
		return
	}
	from := len(p.errs)
	addObjectErrors(corevalidation.ValidatePersistentVolumeClaim(&in, corevalidation.ValidationOptionsForPersistentVolumeClaimCreate()), pvc.Annotations, p)
	for i := from; i < len(p.errs); i++ {
		// Kubernetes names a request by its resource alone; the
		// manifest's field (and line) is under requests.
		if r, ok := strings.CutPrefix(p.errs[i].field, "spec.resources["); ok && strings.HasSuffix(r, "]") {
			p.errs[i].field = "spec.resources.requests." + strings.TrimSuffix(r, "]")
		}
	}
	if pvc.Spec.DataSource != nil {
		p.invalid("spec.dataSource", notSupported("volumes are provisioned empty"))
	} else if pvc.Spec.DataSourceRef != nil {
		p.invalid("spec.dataSourceRef", notSupported("volumes are provisioned empty"))
	}
	if pvc.Spec.VolumeAttributesClassName != nil {
		p.invalid("spec.volumeAttributesClassName", notSupported("there are no VolumeAttributesClasses without a control plane"))
	}
	if v, ok := pvc.Annotations[AnnotationReclaimPolicy]; ok && v != string(v1.PersistentVolumeReclaimRetain) && v != string(v1.PersistentVolumeReclaimDelete) {
		p.invalid("metadata.annotations."+AnnotationReclaimPolicy, fmt.Sprintf("Unsupported value: %q: supported values: \"Delete\", \"Retain\"", v))
	}
}

// validateVolume defaults and validates a PersistentVolume document as the
// apiserver does on create (ValidatePersistentVolume: capacity, access
// modes, exactly one source, nodeAffinity for a local volume, ...), and
// refuses what podvisor cannot mount: sources other than local and
// hostPath, a hostPath of volumeMode Block whose type is not BlockDevice
// (validateBlockVolume). Its reclaim policy defaults to Retain, as the
// API's; podvisor never removes a PersistentVolume's path.
func validateVolume(pv *v1.PersistentVolume, p *problems) {
	corev1.SetObjectDefaults_PersistentVolume(pv)
	var in core.PersistentVolume
	if err := corev1.Convert_v1_PersistentVolume_To_core_PersistentVolume(pv, &in, nil); err != nil {
		p.invalid("", "convert to the internal PersistentVolume type for validation: "+err.Error())
		return
	}
	addObjectErrors(corevalidation.ValidatePersistentVolume(&in, corevalidation.ValidationOptionsForPersistentVolume(&in, nil)), pv.Annotations, p)
	validateBlockVolume(pv, p)
	for _, src := range volumeSourceNames(pv.Spec.PersistentVolumeSource) {
		if src != "local" && src != "hostPath" {
			p.invalid("spec."+src, notSupported("local and hostPath PersistentVolumes only"))
		}
	}
	if l := pv.Spec.Local; l != nil && l.FSType != nil && *l.FSType != "" {
		p.invalid("spec.local.fsType", notSupported("local volumes are directories; a block device is not formatted or mounted"))
	}
}

// volumeSourceNames lists the JSON names of the sources a PersistentVolume sets.
func volumeSourceNames(s v1.PersistentVolumeSource) []string {
	var out []string
	add := func(set bool, name string) {
		if set {
			out = append(out, name)
		}
	}
	add(s.GCEPersistentDisk != nil, "gcePersistentDisk")
	add(s.AWSElasticBlockStore != nil, "awsElasticBlockStore")
	add(s.HostPath != nil, "hostPath")
	add(s.Glusterfs != nil, "glusterfs")
	add(s.NFS != nil, "nfs")
	add(s.RBD != nil, "rbd")
	add(s.ISCSI != nil, "iscsi")
	add(s.Cinder != nil, "cinder")
	add(s.CephFS != nil, "cephfs")
	add(s.FC != nil, "fc")
	add(s.Flocker != nil, "flocker")
	add(s.FlexVolume != nil, "flexVolume")
	add(s.AzureFile != nil, "azureFile")
	add(s.VsphereVolume != nil, "vsphereVolume")
	add(s.Quobyte != nil, "quobyte")
	add(s.AzureDisk != nil, "azureDisk")
	add(s.PhotonPersistentDisk != nil, "photonPersistentDisk")
	add(s.PortworxVolume != nil, "portworxVolume")
	add(s.ScaleIO != nil, "scaleIO")
	add(s.Local != nil, "local")
	add(s.StorageOS != nil, "storageos")
	add(s.CSI != nil, "csi")
	return out
}

// ClaimDir is the name of the directory podvisor provisions for claim
// namespace/name under its volumes directory. Namespaces and claim names
// are DNS names, which hold no "_": the name is unambiguous.
func ClaimDir(namespace, name string) string { return namespace + "_" + name }

// BindClaims binds every PersistentVolumeClaim among objs, keyed
// "namespace/name", as Kubernetes' binder would on node nodeName: a claim
// naming a PersistentVolume (spec.volumeName) gets it if it exists, is
// not bound to another claim and satisfies the claim (capacity, class,
// volumeMode); otherwise the smallest available PersistentVolume that
// matches it (findVolume: a claimRef pre-binding it, capacity,
// volumeMode, storageClassName, selector, nodeAffinity for this node,
// access modes) is its; a claim that matches none is provisioned a
// directory of its own, as a dynamic provisioner would, unless it asks
// for no provisioning (storageClassName "") or selects volumes by label
// (a provisioner refuses a selector) or is of volumeMode Block (podvisor
// provisions directories only): those stay unbound. Claims are bound in
// order of key; a volume binds one claim.
func BindClaims(objs []*Object, nodeName string) map[string]ClaimBinding {
	var claims []*v1.PersistentVolumeClaim
	var vols []*v1.PersistentVolume
	for _, o := range objs {
		switch {
		case o.Claim != nil:
			claims = append(claims, o.Claim)
		case o.Volume != nil:
			vols = append(vols, o.Volume)
		}
	}
	if len(claims) == 0 {
		return nil
	}
	slices.SortFunc(claims, func(a, b *v1.PersistentVolumeClaim) int {
		return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	slices.SortFunc(vols, func(a, b *v1.PersistentVolume) int { return cmp.Compare(a.Name, b.Name) })
	node := map[string]string{v1.LabelHostname: nodeName, v1.LabelOSStable: "linux"}
	used := map[string]*v1.PersistentVolume{}
	out := make(map[string]ClaimBinding, len(claims))
	// Claims naming their volume first: a volume they name is theirs.
	for _, named := range []bool{true, false} {
		for _, c := range claims {
			if (c.Spec.VolumeName != "") != named {
				continue
			}
			out[c.Namespace+"/"+c.Name] = bindClaim(c, vols, node, used)
		}
	}
	return out
}

func bindClaim(c *v1.PersistentVolumeClaim, vols []*v1.PersistentVolume, node map[string]string, used map[string]*v1.PersistentVolume) ClaimBinding {
	unbound := func(detail string) ClaimBinding {
		return ClaimBinding{Unbound: "PVC is not bound", Detail: detail}
	}
	req := c.Spec.Resources.Requests[v1.ResourceStorage]
	if name := c.Spec.VolumeName; name != "" {
		i := slices.IndexFunc(vols, func(v *v1.PersistentVolume) bool { return v.Name == name })
		if i < 0 {
			return unbound(fmt.Sprintf("PersistentVolume %q named by spec.volumeName is not defined in the manifest directory", name))
		}
		v := vols[i]
		if _, taken := used[name]; taken || (v.Spec.ClaimRef != nil && !claimRefersTo(v, c)) {
			return unbound(fmt.Sprintf("PersistentVolume %q is bound to another claim", name))
		}
		if reason := volumeMismatch(c, v); reason != "" {
			return unbound(fmt.Sprintf("cannot bind to requested volume %q: %s", name, reason))
		}
		used[name] = v
		return volumeBinding(c, v)
	}
	v, err := findVolume(c, vols, node, used)
	if err != nil {
		return unbound(err.Error())
	}
	if v != nil {
		used[v.Name] = v
		return volumeBinding(c, v)
	}
	switch {
	case isBlock(c.Spec.VolumeMode):
		return unbound(noBlockVolume)
	case c.Spec.StorageClassName != nil && *c.Spec.StorageClassName == "":
		return unbound(`no PersistentVolume document matches it, and storageClassName "" asks for no provisioning`)
	case c.Spec.Selector != nil:
		return unbound("no PersistentVolume document matches it, and a claim with a selector is not provisioned")
	}
	return ClaimBinding{
		Dir:     ClaimDir(c.Namespace, c.Name),
		Delete:  c.Annotations[AnnotationReclaimPolicy] == string(v1.PersistentVolumeReclaimDelete),
		Request: req.Value(),
		OncePod: slices.Contains(c.Spec.AccessModes, v1.ReadWriteOncePod),
	}
}

// volumeMismatch is the binder's checkVolumeSatisfyClaim: "" when volume v
// can hold claim c.
func volumeMismatch(c *v1.PersistentVolumeClaim, v *v1.PersistentVolume) string {
	req := c.Spec.Resources.Requests[v1.ResourceStorage]
	capacity := v.Spec.Capacity[v1.ResourceStorage]
	switch {
	case capacity.Cmp(req) < 0:
		return "requested PV is too small"
	case volumeClass(v) != claimClass(c):
		return "storageClassName does not match"
	case volumeModesDiffer(c, v):
		return "incompatible volumeMode"
	case !accessModesFit(c, v):
		return "incompatible accessMode"
	}
	return ""
}

func volumeBinding(c *v1.PersistentVolumeClaim, v *v1.PersistentVolume) ClaimBinding {
	b := ClaimBinding{Volume: v.Name, OncePod: slices.Contains(c.Spec.AccessModes, v1.ReadWriteOncePod), Block: isBlock(v.Spec.VolumeMode)}
	switch {
	case v.Spec.Local != nil:
		b.Path = v.Spec.Local.Path
	case v.Spec.HostPath != nil:
		b.Path, b.HostPath = v.Spec.HostPath.Path, true
		if t := v.Spec.HostPath.Type; t != nil {
			b.HostPathType = *t
		}
	}
	return b
}

// ClaimReference is a pod's use of a PersistentVolumeClaim.
type ClaimReference struct {
	// Volume is the pod's volume name; Claim its claimName.
	Volume, Claim string
	// Field is "spec.volumes[i].persistentVolumeClaim.claimName".
	Field string
	// ReadOnly is the volume source's readOnly.
	ReadOnly bool
}

// ClaimReferences lists the pod's persistentVolumeClaim volumes.
func ClaimReferences(pod *v1.Pod) []ClaimReference {
	var out []ClaimReference
	for i, vol := range pod.Spec.Volumes {
		if s := vol.PersistentVolumeClaim; s != nil {
			out = append(out, ClaimReference{Volume: vol.Name, Claim: s.ClaimName, ReadOnly: s.ReadOnly,
				Field: fmt.Sprintf("spec.volumes[%d].persistentVolumeClaim.claimName", i)})
		}
	}
	return out
}

// ClaimError is kubelet's error for a claim that cannot be used, from the
// binding (ok false: no claim document): "error processing PVC ns/name:
// ...".
func ClaimError(namespace, claim string, b ClaimBinding, ok bool) string {
	switch {
	case !ok:
		return fmt.Sprintf("error processing PVC %s/%s: failed to fetch PVC from API server: persistentvolumeclaims %q not found", namespace, claim, claim)
	case b.Unbound != "":
		return fmt.Sprintf("error processing PVC %s/%s: %s", namespace, claim, b.Unbound)
	}
	return ""
}

// MissingClaims returns a warning (wrapping ErrMissingClaim) for every
// PersistentVolumeClaim the pod uses that is not defined in the manifest
// directory, cannot be bound, or is bound to a volume of another volume
// mode than the pod's use of it needs (VolumeModeMismatch), at the line
// of its claimName. The pod is not refused: it waits, as kubelet's does.
func MissingClaims(p *Pod, bindings map[string]ClaimBinding) []*FileError {
	var errs []*FileError
	for _, r := range ClaimReferences(p.Pod) {
		key := p.Pod.Namespace + "/" + r.Claim
		b, ok := bindings[key]
		var reason string
		switch {
		case !ok:
			reason = fmt.Sprintf("PersistentVolumeClaim %s is not defined in the manifest directory; the pod waits for it", key)
		case b.Unbound != "":
			reason = fmt.Sprintf("PersistentVolumeClaim %s is not bound (%s); the pod waits for it", key, b.Detail)
		default:
			msg := VolumeModeMismatch(p.Pod, r.Volume, b)
			if msg == "" {
				continue
			}
			reason = fmt.Sprintf("PersistentVolumeClaim %s: %s; the pod waits", key, msg)
		}
		line := p.Line
		if l := p.RefLines[r.Field]; l > 0 {
			line = l
		}
		errs = append(errs, &FileError{Path: p.Path, Line: line, Field: r.Field, Reason: reason, Err: ErrMissingClaim})
	}
	return errs
}

// NewVolumeObject rebuilds an Object from a PersistentVolumeClaim or a
// PersistentVolume (exactly one is non-nil) already decoded and validated,
// as the watcher's state file keeps them. It returns nil when both are nil.
func NewVolumeObject(path string, doc, line int, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) *Object {
	o := &Object{Path: path, Doc: doc, Line: line, Claim: claim, Volume: pv}
	switch {
	case claim != nil:
		o.Kind, o.Key = "PersistentVolumeClaim", claim.Namespace+"/"+claim.Name
	case pv != nil:
		o.Kind, o.Key = "PersistentVolume", pv.Name
	default:
		return nil
	}
	o.Hash = objectHash(o, path)
	return o
}
