package printers

import (
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/podvisor/podvisor/api"
	v1 "k8s.io/api/core/v1"
)

// claimVolumePath is the annotation the daemon puts on a bound claim: the
// directory it is bound to.
const claimVolumePath = "podvisor.io/volume-path"

// claimHeader is kubectl get persistentvolumeclaims' header.
// (-o wide adds VOLUMEMODE).
var claimHeader = []string{"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"}

// claimRow is a claim's row as kubectl prints it: its status, the volume
// it is bound to (the PersistentVolume document, or the directory podvisor
// provisioned), its capacity, its access modes (RWO, ROX, RWX, RWOP) and
// its storage class (the volume attributes class is always unset); wide
// adds its volume mode.
func claimRow(name string, c *v1.PersistentVolumeClaim, wide bool, now time.Time) []string {
	volume, capacity := c.Spec.VolumeName, ""
	if volume == "" {
		volume = c.Annotations[claimVolumePath]
	}
	if q, ok := c.Status.Capacity[v1.ResourceStorage]; ok {
		capacity = q.String()
	}
	class := ""
	if c.Spec.StorageClassName != nil {
		class = *c.Spec.StorageClassName
	}
	row := []string{name, string(c.Status.Phase), volume, capacity, accessModes(c.Status.AccessModes), class, "<unset>", sinceString(c.CreationTimestamp, now)}
	if wide {
		mode := "<unset>"
		if c.Spec.VolumeMode != nil {
			mode = string(*c.Spec.VolumeMode)
		}
		row = append(row, mode)
	}
	return row
}

// accessModes is kubectl's short form of access modes.
func accessModes(modes []v1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range modes {
		switch m {
		case v1.ReadWriteOnce:
			out = append(out, "RWO")
		case v1.ReadOnlyMany:
			out = append(out, "ROX")
		case v1.ReadWriteMany:
			out = append(out, "RWX")
		case v1.ReadWriteOncePod:
			out = append(out, "RWOP")
		default:
			out = append(out, string(m))
		}
	}
	return strings.Join(out, ",")
}

// DescribeClaim prints a local PersistentVolumeClaim as kubectl describe
// pvc does (status, volume, capacity, access modes, volume mode), with the
// manifest it comes from, the pods using it and the events about it.
func DescribeClaim(w io.Writer, obj *api.Object, events []v1.Event, now time.Time) error {
	c := obj.PersistentVolumeClaim
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := describePrinter(tw)
	describeObjectMeta(p, obj, c.Labels, c.Annotations)
	class := "<unset>"
	if c.Spec.StorageClassName != nil {
		class = *c.Spec.StorageClassName
	}
	row := claimRow(obj.Name, c, false, now)
	p(0, "StorageClass:\t%s", class)
	p(0, "Status:\t%s", row[1])
	p(0, "Volume:\t%s", row[2])
	p(0, "Capacity:\t%s", row[3])
	p(0, "Access Modes:\t%s", row[4])
	mode := ""
	if c.Spec.VolumeMode != nil {
		mode = string(*c.Spec.VolumeMode)
	}
	p(0, "VolumeMode:\t%s", mode)
	p(0, "")
	describeUsers(p, obj)
	describeObjectEvents(p, obj, events, now)
	return tw.Flush()
}
