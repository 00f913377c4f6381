package podfile

import (
	"errors"
	"strings"
	"testing"
)

const blockAffinity = `  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [node-1]}]}]}}
`

func TestBindBlockClaims(t *testing.T) {
	const docs = `apiVersion: v1
kind: PersistentVolume
metadata: {name: dir}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /srv/dir}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: disk}
spec:
  volumeMode: Block
  capacity: {storage: 2Gi}
  accessModes: [ReadWriteOncePod]
  local: {path: /dev/loop7}
` + blockAffinity + `---
apiVersion: v1
kind: PersistentVolume
metadata: {name: hostdisk}
spec: {volumeMode: Block, capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /dev/sdz, type: BlockDevice}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: blk}
spec: {volumeMode: Block, storageClassName: "", accessModes: [ReadWriteOncePod], resources: {requests: {storage: 2Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: fs}
spec: {storageClassName: "", accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: hblk}
spec: {volumeMode: Block, storageClassName: "", accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: nopv}
spec: {volumeMode: Block, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: named}
spec: {volumeMode: Block, volumeName: dir, storageClassName: "", accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: fsnamed}
spec: {volumeName: hostdisk, storageClassName: "", accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`
	objs, errs := parseObjects(t, docs)
	if errs != "" {
		t.Fatal(errs)
	}
	got := BindClaims(objs, node)
	for key, want := range map[string]ClaimBinding{
		// Block binds Block only, Filesystem only Filesystem.
		"default/blk":  {Volume: "disk", Path: "/dev/loop7", Block: true, OncePod: true},
		"default/fs":   {Volume: "dir", Path: "/srv/dir", HostPath: true},
		"default/hblk": {Volume: "hostdisk", Path: "/dev/sdz", HostPath: true, HostPathType: "BlockDevice", Block: true},
		// A Block claim is never provisioned a directory.
		"default/nopv": {Unbound: "PVC is not bound", Detail: noBlockVolume},
		// A volume it names must have its mode.
		"default/named":   {Unbound: "PVC is not bound", Detail: `cannot bind to requested volume "dir": incompatible volumeMode`},
		"default/fsnamed": {Unbound: "PVC is not bound", Detail: `cannot bind to requested volume "hostdisk": incompatible volumeMode`},
	} {
		if got[key] != want {
			t.Errorf("%s: got %+v, want %+v", key, got[key], want)
		}
	}
}

func TestBlockVolumeValidation(t *testing.T) {
	const pv = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: v}\nspec:\n  volumeMode: Block\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"local", pv + "  local: {path: /dev/loop7}\n" + blockAffinity, ""},
		{"hostPath", pv + "  hostPath: {path: /dev/sdz}\n", ""},
		{"hostPath BlockDevice", pv + "  hostPath: {path: /dev/sdz, type: BlockDevice}\n", ""},
		{"hostPath Directory", pv + "  hostPath: {path: /srv, type: Directory}\n",
			`/m/x.yaml:8: spec.hostPath.type: Unsupported value: "Directory": a PersistentVolume of volumeMode Block is a block device`},
		{"block claim", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: d}\nspec:\n  volumeMode: Block\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := parseObjects(t, tc.doc)
			if tc.want == "" && errs != "" || !strings.Contains(errs, tc.want) {
				t.Errorf("errors:\n%s\nwant %q", errs, tc.want)
			}
		})
	}
}

// devicePod is basePod with a claim volume "b" (claim blk) and an
// emptyDir "e", its container given extra lines.
func devicePod(extra string) string {
	return basePod + extra + "  volumes:\n  - name: b\n    persistentVolumeClaim: {claimName: blk}\n  - name: c\n    persistentVolumeClaim: {claimName: blk2}\n  - name: e\n    emptyDir: {}\n"
}

func TestVolumeDevicesValidation(t *testing.T) {
	for _, tc := range []struct{ name, extra, want string }{
		{"good", "    volumeDevices: [{name: b, devicePath: /dev/xvda}]\n", ""},
		{"relative", "    volumeDevices: [{name: b, devicePath: dev/xvda}]\n",
			`/m/x.yaml:9: spec.containers[0].volumeDevices[0].devicePath: must be an absolute path, got "dev/xvda"`},
		{"not a volume", "    volumeDevices: [{name: x, devicePath: /dev/xvda}]\n",
			`spec.containers[0].volumeDevices[0].name: Not found: "x"`},
		{"not a claim", "    volumeDevices: [{name: e, devicePath: /dev/xvda}]\n",
			`spec.containers[0].volumeDevices[0].name: Invalid value: "e": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode`},
		{"also mounted", "    volumeMounts: [{name: b, mountPath: /data}]\n    volumeDevices: [{name: b, devicePath: /dev/xvda}]\n",
			`spec.containers[0].volumeDevices[0].name: Invalid value: "b": must not already exist in volumeMounts`},
		{"twice once cleaned", "    volumeDevices: [{name: b, devicePath: /dev/xvda}, {name: c, devicePath: /dev//xvda}]\n",
			`spec.containers[0].volumeDevices[1].devicePath: must be unique, "/dev/xvda" is given twice`},
		{"a mount path once cleaned", "    volumeMounts: [{name: e, mountPath: /data/}]\n    volumeDevices: [{name: b, devicePath: /data}]\n",
			`spec.containers[0].volumeDevices[0].devicePath: must not be a mount path of the container, "/data" is in volumeMounts`},
		{"init container", "  initContainers:\n  - name: init\n    image: busybox\n    volumeDevices: [{name: b, devicePath: xvda}]\n",
			`/m/x.yaml:12: spec.initContainers[0].volumeDevices[0].devicePath: must be an absolute path`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := parseDefault("/m/x.yaml", []byte(devicePod(tc.extra)), node)
			all := joinErrs(errs)
			if tc.want == "" && all != "" || !strings.Contains(all, tc.want) {
				t.Errorf("errors:\n%s\nwant %q", all, tc.want)
			}
		})
	}
}

func TestVolumeModeMismatch(t *testing.T) {
	pods := mustParse(t, "/m/x.yaml", devicePod("    volumeMounts: [{name: c, mountPath: /data}]\n    volumeDevices: [{name: b, devicePath: /dev/xvda}]\n"))
	pod := pods[0]
	block := ClaimBinding{Volume: "disk", Path: "/dev/loop7", Block: true}
	dir := ClaimBinding{Dir: "default_blk"}
	for _, tc := range []struct {
		name, volume string
		b            ClaimBinding
		want         string
	}{
		{"device of a Block claim", "b", block, ""},
		{"mount of a Filesystem claim", "c", dir, ""},
		{"device of a Filesystem claim", "b", dir, "volume b has volumeMode Filesystem, but is specified in volumeDevices"},
		{"mount of a Block claim", "c", block, "volume c has volumeMode Block, but is specified in volumeMounts"},
		{"unbound", "b", ClaimBinding{Unbound: "PVC is not bound"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := VolumeModeMismatch(pod.Pod, tc.volume, tc.b); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}

	// validate warns, at the claimName's line, and the pod waits.
	warns := MissingClaims(pod, map[string]ClaimBinding{"default/blk": dir, "default/blk2": dir})
	if len(warns) != 1 || !errors.Is(warns[0], ErrMissingClaim) ||
		warns[0].Error() != "/m/x.yaml:13: spec.volumes[0].persistentVolumeClaim.claimName: PersistentVolumeClaim default/blk: volume b has volumeMode Filesystem, but is specified in volumeDevices; the pod waits" {
		t.Errorf("warnings: %v", warns)
	}
}
