package supervise

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/podvisor/podvisor/mounts"
	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// kubeletDefaultMode is the mode of a volume file when neither the item nor
// the volume says (the API's default for defaultMode).
const kubeletDefaultMode int32 = 0o644

// volumeFiles computes the files of a configMap, secret, downwardAPI or
// projected volume from the local objects as kubelet's volume plugins do
// (their MakePayload and CollectData): every key of the object (Secret data
// as decoded bytes) or only the items, each item's mode else defaultMode
// (0644 unset); a missing optional object is empty and an optional item
// whose key is missing is left out; a missing object or key that is not
// optional is kubelet's error. A projected volume merges its sources in
// order, a later source's file replacing an earlier one's at the same path,
// and reports every source's error. allocatable resolves unset limits of a
// resourceFieldRef, as for env.
func volumeFiles(pod *v1.Pod, v *v1.Volume, objs Objects, allocatable v1.ResourceList) (mounts.Files, error) {
	src := envSource{ns: pod.Namespace, objs: objs}
	switch {
	case v.ConfigMap != nil:
		s := v.ConfigMap
		return configMapFiles(src, s.Name, s.Items, modeOr(s.DefaultMode), isOptional(s.Optional))
	case v.Secret != nil:
		s := v.Secret
		return secretFiles(src, s.SecretName, s.Items, modeOr(s.DefaultMode), isOptional(s.Optional))
	case v.DownwardAPI != nil:
		return downwardAPIFiles(pod, v.DownwardAPI.Items, modeOr(v.DownwardAPI.DefaultMode), allocatable)
	case v.Projected != nil:
		mode := modeOr(v.Projected.DefaultMode)
		out := mounts.Files{}
		var errs []error
		for _, s := range v.Projected.Sources {
			var files mounts.Files
			var err error
			switch {
			case s.ConfigMap != nil:
				files, err = configMapFiles(src, s.ConfigMap.Name, s.ConfigMap.Items, mode, isOptional(s.ConfigMap.Optional))
			case s.Secret != nil:
				files, err = secretFiles(src, s.Secret.Name, s.Secret.Items, mode, isOptional(s.Secret.Optional))
			case s.DownwardAPI != nil:
				files, err = downwardAPIFiles(pod, s.DownwardAPI.Items, mode, allocatable)
			default:
				err = fmt.Errorf("projected source %s is not supported", sourceKind(s))
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for p, f := range files {
				out[p] = f
			}
		}
		if err := utilerrors.NewAggregate(errs); err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, fmt.Errorf("volume %q: not a configMap, secret, downwardAPI or projected volume", v.Name)
}

func modeOr(m *int32) int32 {
	if m == nil {
		return kubeletDefaultMode
	}
	return *m
}

func configMapFiles(src envSource, name string, items []v1.KeyToPath, mode int32, optional bool) (mounts.Files, error) {
	cm := src.configMap(name)
	if cm == nil {
		if !optional {
			return nil, configMapNotFound(name)
		}
		cm = &v1.ConfigMap{}
	}
	get := func(k string) ([]byte, bool) {
		if s, ok := cm.Data[k]; ok {
			return []byte(s), true
		}
		b, ok := cm.BinaryData[k]
		return b, ok
	}
	keys := make([]string, 0, len(cm.Data)+len(cm.BinaryData))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	for k := range cm.BinaryData {
		keys = append(keys, k)
	}
	return keyFiles(keys, get, items, mode, optional, "configmap references non-existent config key: %s")
}

func secretFiles(src envSource, name string, items []v1.KeyToPath, mode int32, optional bool) (mounts.Files, error) {
	sec := src.secret(name)
	if sec == nil {
		if !optional {
			return nil, secretNotFound(name)
		}
		sec = &v1.Secret{}
	}
	keys := make([]string, 0, len(sec.Data))
	for k := range sec.Data {
		keys = append(keys, k)
	}
	get := func(k string) ([]byte, bool) { b, ok := sec.Data[k]; return b, ok }
	return keyFiles(keys, get, items, mode, optional, "references non-existent secret key: %s")
}

// keyFiles is kubelet's MakePayload over an object's keys.
func keyFiles(keys []string, get func(string) ([]byte, bool), items []v1.KeyToPath, mode int32, optional bool, missing string) (mounts.Files, error) {
	out := mounts.Files{}
	if len(items) == 0 {
		for _, k := range keys {
			b, _ := get(k)
			out[k] = mounts.File{Data: b, Mode: mode}
		}
		return out, nil
	}
	for _, it := range items {
		b, ok := get(it.Key)
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf(missing, it.Key)
		}
		out[it.Path] = mounts.File{Data: b, Mode: modeOrDefault(it.Mode, mode)}
	}
	return out, nil
}

func modeOrDefault(m *int32, def int32) int32 {
	if m == nil {
		return def
	}
	return *m
}

// downwardAPIFiles is kubelet's downwardapi CollectData: fieldRef through
// the same resolution as env (the volume's paths are metadata.name,
// namespace, uid, labels and annotations, whole or one key, which
// Kubernetes' validation enforces), resourceFieldRef of the named
// container with its divisor, as env's.
func downwardAPIFiles(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, mode int32, allocatable v1.ResourceList) (mounts.Files, error) {
	out := mounts.Files{}
	var errs []error
	for _, it := range items {
		f := mounts.File{Mode: modeOrDefault(it.Mode, mode)}
		switch {
		case it.FieldRef != nil:
			val, err := fieldRefValue(it.FieldRef.FieldPath, pod, envFacts{})
			if err != nil {
				errs = append(errs, err)
			}
			f.Data = []byte(val)
		case it.ResourceFieldRef != nil:
			val, err := resourceFieldValue(it.ResourceFieldRef, pod, nil, allocatable)
			if err != nil {
				errs = append(errs, err)
			}
			f.Data = []byte(val)
		}
		out[filepath.Clean(it.Path)] = f
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		return nil, err
	}
	return out, nil
}

func sourceKind(s v1.VolumeProjection) string {
	switch {
	case s.ServiceAccountToken != nil:
		return "serviceAccountToken"
	case s.ClusterTrustBundle != nil:
		return "clusterTrustBundle"
	case s.PodCertificate != nil:
		return "podCertificate"
	}
	return "(empty)"
}

// volumeObjects names the ConfigMaps and Secrets a volume reads, for
// events: `ConfigMap "conf"`, `Secret "creds"`.
func volumeObjects(v *v1.Volume) string {
	var names []string
	add := func(kind, name string) {
		if n := kind + " " + fmt.Sprintf("%q", name); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	switch {
	case v.ConfigMap != nil:
		add("ConfigMap", v.ConfigMap.Name)
	case v.Secret != nil:
		add("Secret", v.Secret.SecretName)
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil {
				add("ConfigMap", s.ConfigMap.Name)
			}
			if s.Secret != nil {
				add("Secret", s.Secret.Name)
			}
		}
	}
	return strings.Join(names, ", ")
}

// contentVolumes returns the pod's configMap, secret, downwardAPI and
// projected volumes.
func contentVolumes(pod *v1.Pod) []*v1.Volume {
	var out []*v1.Volume
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil {
			out = append(out, v)
		}
	}
	return out
}

// failedMount is kubelet's FailedMount message for a volume whose set-up
// failed. It names objects and keys, never values.
func failedMount(v *v1.Volume, err error) string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", v.Name, err)
}

// mountError returns kubelet's FailedMount message for the first content
// volume whose files cannot be computed (a missing object or key) and that
// holds no version yet; "" when every volume can be set up. A volume that
// has files (a podvisor restarted beside running containers) keeps them.
func (w *podWorker) mountError(pod *v1.Pod) string {
	dir := w.d.layout.PodFiles(string(w.uid))
	alloc := w.envFacts().Allocatable
	for _, v := range contentVolumes(pod) {
		if _, err := volumeFiles(pod, v, w.objs, alloc); err != nil && !mounts.HasFiles(dir, v) {
			return failedMount(v, err)
		}
	}
	return ""
}

// writeVolumes writes the pod's configMap, secret, downwardAPI and
// projected volumes from the objects the worker has, each only if its
// content changed. A volume rewritten while the pod runs gets a Normal
// VolumeUpdated event naming the volume and its objects. A volume whose
// object or key went missing keeps the version it has, as kubelet keeps a
// mounted volume, with a FailedMount warning; one with no version yet is
// an error (the planner waits for it before it gets here).
func (w *podWorker) writeVolumes(pod *v1.Pod) error {
	mp := w.mountsPod(pod)
	alloc := w.envFacts().Allocatable
	var errs []error
	for _, v := range contentVolumes(pod) {
		had := mounts.HasFiles(mp.Dir, v)
		files, err := volumeFiles(pod, v, w.objs, alloc)
		if err != nil {
			msg := failedMount(v, err)
			if !had {
				errs = append(errs, errors.New(msg))
				continue
			}
			if !w.warned["mount/"+msg] {
				w.warned["mount/"+msg] = true
				w.event(pod, "", v1.EventTypeWarning, "FailedMount", "%s (the volume keeps its current files)", msg)
			}
			continue
		}
		changed, err := mounts.WriteVolume(mp, v, files)
		if err != nil {
			errs = append(errs, fmt.Errorf("volume %q: %w", v.Name, err))
			continue
		}
		if changed && had {
			if objs := volumeObjects(v); objs != "" {
				w.event(pod, "", v1.EventTypeNormal, "VolumeUpdated", "Updated the files of volume %q from %s", v.Name, objs)
			} else {
				w.event(pod, "", v1.EventTypeNormal, "VolumeUpdated", "Updated the files of volume %q", v.Name)
			}
			w.log.Info("volume updated", "volume", v.Name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	w.volumesAt, w.volumesSet, w.volumesRetry = w.objs, true, time.Time{}
	return nil
}

// refreshVolumes rewrites the volumes of a running pod whose objects
// changed; a failure is shown and tried again after errorRetry.
func (w *podWorker) refreshVolumes(pod *v1.Pod) {
	if err := w.writeVolumes(pod); err != nil {
		w.event(pod, "", v1.EventTypeWarning, "FailedMount", "%v", err)
		w.volumesRetry = w.d.clock.Now().Add(errorRetry)
	}
}

// applyMountWait shows a FailedMount warning each time the message the
// pod's volumes wait on changes, as kubelet's volume manager reports it.
func (w *podWorker) applyMountWait(pod *v1.Pod, msg string) {
	if msg != "" && msg != w.mountWait {
		w.event(pod, "", v1.EventTypeWarning, "FailedMount", "%s", msg)
	}
	w.mountWait = msg
}
