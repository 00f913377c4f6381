package manifest

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/podvisor/podvisor/manifest/podfile"
	v1 "k8s.io/api/core/v1"
)

// stateVersion is the format of state.json. Version 1 held Secrets whole;
// it is read (its Secrets' values moved to the run directory) and
// rewritten as version 2 at once. A file of another version is ignored
// (and rewritten).
const stateVersion = 2

// StateFile returns where a Source with StateDir stateDir keeps the last
// good content of the manifests: <stateDir>/manifests/state.json. It
// holds no Secret value: only each Secret's name, type, keys and digest.
func StateFile(stateDir string) string {
	return filepath.Join(stateDir, "manifests", "state.json")
}

// persistedState is state.json: the last good content of every manifest
// file, per document, and which file each pod, ConfigMap and Secret came
// from, so that a restart (or a reboot) with a broken file keeps its pods
// and resolves duplicates as before.
type persistedState struct {
	Version int    `json:"version"`
	Node    string `json:"node"`
	Dir     string `json:"dir"`
	// Files maps a manifest path to its last good documents.
	Files map[string][]persistedDoc `json:"files,omitempty"`
	// Winners maps "Pod namespace/name" (or "ConfigMap ...", "Secret ...")
	// to the file it is taken from.
	Winners map[string]string `json:"winners,omitempty"`
}

type persistedDoc struct {
	Doc     int               `json:"doc"`
	Pods    []persistedPod    `json:"pods,omitempty"`
	Objects []persistedObject `json:"objects,omitempty"`
}

type persistedPod struct {
	Pod      *v1.Pod  `json:"pod"`
	Warnings []string `json:"warnings,omitempty"`
	Line     int      `json:"line,omitempty"`
}

type persistedObject struct {
	Line      int           `json:"line,omitempty"`
	ConfigMap *v1.ConfigMap `json:"configMap,omitempty"`
	// Secret is a Secret whole: only in a version 1 state file.
	Secret *v1.Secret `json:"secret,omitempty"`
	// SecretRef names a Secret whose content is kept in the secrets file.
	SecretRef *persistedSecretRef `json:"secretRef,omitempty"`
	// Claim and Volume are a PersistentVolumeClaim and a PersistentVolume.
	Claim  *v1.PersistentVolumeClaim `json:"persistentVolumeClaim,omitempty"`
	Volume *v1.PersistentVolume      `json:"persistentVolume,omitempty"`
}

// persistedSecretRef is what state.json says of a Secret: nothing that
// its values, labels or annotations (kubectl's last-applied
// configuration holds the whole Secret) would tell.
type persistedSecretRef struct {
	Namespace string        `json:"namespace"`
	Name      string        `json:"name"`
	Type      v1.SecretType `json:"type,omitempty"`
	Keys      []string      `json:"keys,omitempty"`
	// Digest identifies the Secret's content in the secrets file: an
	// HMAC keyed by a key kept there, so that it tells nothing of a
	// short value (a PIN) without that key.
	Digest string `json:"digest"`
}

// loadState reads the state file into the scanner: every file gets its last
// good documents as its current content until it is read, and the winners
// decide duplicates at the first scan. A missing, unreadable or foreign file
// (another node name or format) starts empty. A Secret whose content is
// not in the secrets file (a reboot emptied the run directory) is not
// kept: its pods wait for it as for a missing one until its file is good.
func (s *scanner) loadState() {
	if s.statePath == "" {
		return
	}
	s.loadSecrets()
	data, err := os.ReadFile(s.statePath)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		s.log.Warn("cannot read manifest state; starting without last-known-good manifests", "file", s.statePath, "error", err)
		return
	}
	var ps persistedState
	if err := json.Unmarshal(data, &ps); err != nil {
		s.log.Warn("corrupt manifest state; starting without last-known-good manifests", "file", s.statePath, "error", err)
		return
	}
	if ps.Version == 1 && ps.Node == s.nodeName {
		// Secrets whole: taken as they are, and the file rewritten
		// without their values by the first scan.
		s.log.Info("manifest state of an older format holds Secret values; rewriting it without them", "file", s.statePath)
		data = nil
	} else if ps.Version != stateVersion || ps.Node != s.nodeName {
		// The first scan rewrites it, without what it held.
		s.log.Info("manifest state is for another node or format; ignoring it", "file", s.statePath, "node", ps.Node, "version", ps.Version)
		return
	}
	s.lastState = data
	for path, docs := range ps.Files {
		st := &fileState{lkg: map[int]*docGood{}}
		for _, d := range docs {
			g := &docGood{}
			for _, pp := range d.Pods {
				if pp.Pod == nil || pp.Pod.UID == "" {
					continue
				}
				g.pods = append(g.pods, &Pod{Pod: pp.Pod, Path: path, Doc: d.Doc, Hash: string(pp.Pod.UID), Warnings: pp.Warnings, Line: pp.Line})
			}
			for _, po := range d.Objects {
				secret := po.Secret
				if po.SecretRef != nil {
					if secret = s.secrets.get(*po.SecretRef); secret == nil {
						s.log.Warn("the last good version of a Secret is gone (its content is kept on tmpfs only, in the run directory); it is not used until its manifest is valid",
							"file", path, "secret", po.SecretRef.Namespace+"/"+po.SecretRef.Name)
						s.lastState = nil // rewritten without it
						continue
					}
				}
				o := podfile.NewObject(path, d.Doc, po.Line, po.ConfigMap, secret)
				if o == nil {
					o = podfile.NewVolumeObject(path, d.Doc, po.Line, po.Claim, po.Volume)
				}
				if o == nil {
					continue
				}
				g.objs = append(g.objs, o)
			}
			st.lkg[d.Doc] = g
			st.pods = append(st.pods, g.pods...)
			st.objs = append(st.objs, g.objs...)
		}
		s.state[path] = st
	}
	maps.Copy(s.winners, ps.Winners)
	s.log.Debug("loaded manifest state", "file", s.statePath, "files", len(ps.Files))
}

// persist writes the state file, and the Secrets' content to the secrets
// file, when their content changed, each atomically, so a crash leaves the
// old or the new state, never a torn one. The secrets file is written
// first, so that the state file names no Secret it lacks unless it could
// not be written.
func (s *scanner) persist() {
	if s.statePath == "" {
		return
	}
	ps := persistedState{Version: stateVersion, Node: s.nodeName, Dir: s.dir, Files: map[string][]persistedDoc{}, Winners: s.winners}
	secrets := map[string]*v1.Secret{}
	for path, st := range s.state {
		var docs []persistedDoc
		for _, i := range slices.Sorted(maps.Keys(st.lkg)) {
			g := st.lkg[i]
			d := persistedDoc{Doc: i}
			for _, p := range g.pods {
				d.Pods = append(d.Pods, persistedPod{Pod: p.Pod, Warnings: p.Warnings, Line: p.Line})
			}
			for _, o := range g.objs {
				po := persistedObject{Line: o.Line, ConfigMap: o.ConfigMap, Claim: o.Claim, Volume: o.Volume}
				if o.Secret != nil {
					ref := s.secrets.ref(o.Secret)
					po.SecretRef = &ref
					secrets[ref.Digest] = o.Secret
				}
				d.Objects = append(d.Objects, po)
			}
			docs = append(docs, d)
		}
		if len(docs) > 0 {
			ps.Files[path] = docs
		}
	}
	if err := s.secrets.write(secrets); err != nil && err.Error() != s.secrets.logged {
		// The state file is written all the same, never with the values:
		// a restart then finds these Secrets gone, as after a reboot.
		s.secrets.logged = err.Error()
		s.log.Error("cannot save the last good Secrets; a restart would lose those whose manifests are broken", "file", s.secrets.path, "error", err)
	}
	data, err := json.MarshalIndent(ps, "", "  ")
	if err == nil {
		err = writeIfChanged(s.statePath, data, &s.lastState)
	}
	if err != nil {
		if msg := err.Error(); msg != s.loggedState {
			s.loggedState = msg
			s.log.Error("cannot save last-known-good manifests; a restart would lose them", "file", s.statePath, "error", err)
		}
		return
	}
	s.loggedState = ""
}
