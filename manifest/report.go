package manifest

import (
	"cmp"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/podvisor/podvisor/manifest/podfile"
)

// ValidateReport is what `podvisor validate` prints: every problem, the
// pods that would run, and the warnings. Its JSON field names are stable.
type ValidateReport struct {
	// Errors are the problems that make files (or documents) invalid,
	// sorted by path and line; FileError.Error() renders
	// "file:line: field: reason".
	Errors []*FileError `json:"errors"`
	// Warnings are ignored fields and permission problems.
	Warnings []*FileError `json:"warnings"`
	// Pods are the pods that would run, sorted by namespace/name.
	Pods []ReportPod `json:"pods"`
	// ConfigMaps and Secrets are the keys ("namespace/name") of the objects
	// defined, sorted.
	ConfigMaps []string `json:"configMaps"`
	Secrets    []string `json:"secrets"`
}

// ReportPod is one pod that would run.
type ReportPod struct {
	// Key is "namespace/name", the name with the node suffix.
	Key string `json:"key"`
	// UID is the static pod's UID.
	UID string `json:"uid"`
	// Path is the manifest file.
	Path string `json:"path"`
	// Doc is the document index in the file.
	Doc int `json:"doc"`
}

// Valid reports whether no file (or document) is invalid; warnings do not
// count.
func (r ValidateReport) Valid() bool { return len(r.Errors) == 0 }

// MarshalJSON adds "valid" (Valid()) to the fields.
func (r ValidateReport) MarshalJSON() ([]byte, error) {
	type plain ValidateReport
	return json.Marshal(struct {
		Valid bool `json:"valid"`
		plain
	}{r.Valid(), plain(r)})
}

// Validate checks manifests offline, for `podvisor validate PATH...`, with
// the daemon's exact code. A directory is scanned as the Source scans it
// (same filters, per-document parsing, duplicates, ConfigMap and Secret
// references, permissions), with no last-known-good state: every error
// counts. Files named explicitly are checked together, as if they were one
// directory; a file the daemon would ignore (a dotfile, an editor backup, a
// wrong extension) is an error "not a manifest name (reason)". References
// to ConfigMaps and Secrets (and to their keys), and the pods a pod waits
// for (AnnotationWaitFor), are checked across all the paths together: a
// missing one is a warning (ErrMissingObject, ErrMissingPod), not an
// error, as the daemon runs such a pod and lets it wait. A cycle of
// AnnotationWaitFor is an error (ErrWaitCycle) for each pod on it. nodeName is
// the node name the daemon would use; it is part of the pod names and UIDs.
func Validate(paths []string, nodeName string, opts ParseOptions) ValidateReport {
	r := ValidateReport{Errors: []*FileError{}, Warnings: []*FileError{}, Pods: []ReportPod{}, ConfigMaps: []string{}, Secrets: []string{}}
	var snaps []Snapshot
	discard := slog.New(slog.DiscardHandler)
	var files []string
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			abs = p
		}
		fi, err := os.Stat(abs)
		if err != nil {
			reason := err.Error()
			if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
				reason = pe.Err.Error()
			}
			r.Errors = append(r.Errors, &FileError{Path: abs, Reason: reason, Err: err})
			continue
		}
		if fi.IsDir() {
			sc := newScanner(abs, nodeName, discard)
			sc.opts = opts
			snap, _ := sc.scan(scanRelist)
			snaps = append(snaps, snap)
			continue
		}
		if reason := skipReason(filepath.Base(abs)); reason != "" {
			r.Errors = append(r.Errors, &FileError{Path: abs, Reason: "not a manifest name (" + reason + "); podvisor would ignore this file"})
			continue
		}
		if !fi.Mode().IsRegular() {
			r.Errors = append(r.Errors, &FileError{Path: abs, Reason: "not a regular file; podvisor would ignore it"})
			continue
		}
		if !slices.Contains(files, abs) {
			files = append(files, abs)
		}
	}
	if len(files) > 0 {
		sc := newScanner(filepath.Dir(files[0]), nodeName, discard)
		sc.files, sc.opts = files, opts
		snap, _ := sc.scan(scanRelist)
		snaps = append(snaps, snap)
	}
	r.addAll(snaps, nodeName)
	sortErrors(r.Errors)
	sortErrors(r.Warnings)
	slices.SortFunc(r.Pods, func(a, b ReportPod) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(a.Path, b.Path), cmp.Compare(a.Doc, b.Doc))
	})
	slices.Sort(r.ConfigMaps)
	slices.Sort(r.Secrets)
	return r
}

// addAll adds the scans of the paths given. References are checked
// across all of them, as if they were one directory: a pod in one
// directory may use a ConfigMap of a file named beside it.
func (r *ValidateReport) addAll(snaps []Snapshot, nodeName string) {
	objs := map[string]*Object{}
	var all []*Object
	pods := map[string]bool{}
	for _, snap := range snaps {
		for _, p := range snap.Pods {
			pods[p.Key()] = true
		}
		for _, o := range snap.Objects {
			if objs[o.ID()] == nil {
				objs[o.ID()] = o
				all = append(all, o)
			}
		}
	}
	claims := podfile.BindClaims(all, nodeName)
	for _, snap := range snaps {
		r.add(snap)
		for _, p := range snap.Pods {
			r.Warnings = append(r.Warnings, podfile.MissingClaims(p, claims)...)
			r.Warnings = append(r.Warnings, podfile.MissingReferences(p, func(id string) *Object { return objs[id] })...)
			r.Warnings = append(r.Warnings, missingPods(p, func(k string) bool { return pods[k] })...)
		}
	}
}

func (r *ValidateReport) add(snap Snapshot) {
	r.Errors = append(r.Errors, snap.Errors...)
	for _, w := range snap.Warnings {
		if !errors.Is(w, ErrMissingObject) && !errors.Is(w, ErrMissingPod) { // checked across all the paths
			r.Warnings = append(r.Warnings, w)
		}
	}
	for _, p := range snap.Pods {
		r.Pods = append(r.Pods, ReportPod{Key: p.Key(), UID: p.Hash, Path: p.Path, Doc: p.Doc})
		r.Warnings = append(r.Warnings, p.WarningErrors...)
	}
	r.ConfigMaps = append(r.ConfigMaps, slices.Collect(maps.Keys(snap.ConfigMaps))...)
	r.Secrets = append(r.Secrets, slices.Collect(maps.Keys(snap.Secrets))...)
}
