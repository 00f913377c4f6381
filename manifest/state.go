package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/podvisor/podvisor/internal/atomicfile"
	"github.com/podvisor/podvisor/manifest/podfile"
	v1 "k8s.io/api/core/v1"
)

// stateVersion is the format of state.json; a file of another version is
// ignored (and rewritten).
const stateVersion = 1

// StateFile returns where a Source with StateDir stateDir keeps the last
// good content of the manifests: <stateDir>/manifests/state.json.
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
	Secret    *v1.Secret    `json:"secret,omitempty"`
}

// loadState reads the state file into the scanner: every file gets its last
// good documents as its current content until it is read, and the winners
// decide duplicates at the first scan. A missing, unreadable or foreign file
// (another node name or format) starts empty.
func (s *scanner) loadState() {
	if s.statePath == "" {
		return
	}
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
	if ps.Version != stateVersion || ps.Node != s.nodeName {
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
				o := podfile.NewObject(path, d.Doc, po.Line, po.ConfigMap, po.Secret)
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

// persist writes the state file when its content changed, atomically, so
// a crash leaves the old or the new state, never a torn one.
func (s *scanner) persist() {
	if s.statePath == "" {
		return
	}
	ps := persistedState{Version: stateVersion, Node: s.nodeName, Dir: s.dir, Files: map[string][]persistedDoc{}, Winners: s.winners}
	for path, st := range s.state {
		var docs []persistedDoc
		for _, i := range slices.Sorted(maps.Keys(st.lkg)) {
			g := st.lkg[i]
			d := persistedDoc{Doc: i}
			for _, p := range g.pods {
				d.Pods = append(d.Pods, persistedPod{Pod: p.Pod, Warnings: p.Warnings, Line: p.Line})
			}
			for _, o := range g.objs {
				d.Objects = append(d.Objects, persistedObject{Line: o.Line, ConfigMap: o.ConfigMap, Secret: o.Secret})
			}
			docs = append(docs, d)
		}
		if len(docs) > 0 {
			ps.Files[path] = docs
		}
	}
	data, err := json.MarshalIndent(ps, "", "  ")
	if err == nil && bytes.Equal(data, s.lastState) {
		return
	}
	if err == nil {
		// Private: Secrets may be in it.
		err = atomicfile.Write(s.statePath, data, 0o600)
	}
	if err != nil {
		if msg := err.Error(); msg != s.loggedState {
			s.loggedState = msg
			s.log.Error("cannot save last-known-good manifests; a restart would lose them", "file", s.statePath, "error", err)
		}
		return
	}
	s.lastState, s.loggedState = data, ""
}
