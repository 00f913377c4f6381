package podfile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"time"

	yaml3 "go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// parsePod decodes one pod strictly, checks its fields against the field
// table, computes its identity, defaults and validates it.
func parsePod(path string, docRoot *yaml3.Node, t target, docIndex int, nodeName string, now time.Time, opts Options) (*Pod, []*FileError) {
	var (
		errs  []*FileError
		warns []*FileError
	)
	add := func(field, reason string, line int) {
		if line == 0 {
			line = lineOf(docRoot, t.full(field))
		}
		errs = append(errs, &FileError{Path: path, Line: line, Field: t.full(field), Reason: reason})
	}

	var (
		decoded      v1.Pod
		derrs, dwarn []fieldProblem
	)
	ok := decodeTarget(t, &decoded, opts, &derrs, &dwarn)
	for _, e := range derrs {
		add(e.field, e.reason, e.line)
	}
	if !ok {
		return nil, errs
	}
	for _, w := range dwarn {
		warns = append(warns, &FileError{Path: path, Line: w.line, Field: t.full(w.field), Reason: w.reason, Err: ErrIgnored})
	}

	// Identity first: the UID covers the pod exactly as the user wrote it
	// (encoding/json output is canonical: fixed key order, no comments, and
	// quantities in canonical form), so reformatting keeps it and a change of
	// podvisor's defaulting never changes it.
	canonical, err := json.Marshal(&decoded)
	if err != nil {
		add("", "encode pod: "+err.Error(), 0)
		return nil, errs
	}
	uid := podUID(canonical, path, nodeName)

	var p problems
	(&supportChecker{nodeName: nodeName, p: &p}).checkPod(&decoded)
	metadataWarnings(&decoded, &p)

	// The table's errors and the requests defaulted from limits: Kubernetes'
	// errors about them would say again what is already said.
	rejected := defaultedRequests(&decoded.Spec)
	for _, e := range p.errs {
		rejected = append(rejected, e.field)
	}
	pod := decoded.DeepCopy()
	setDefaults(pod)
	applyIdentity(pod, uid, nodeName, now)
	validatePod(pod, decoded.Name, rejected, &p)

	for _, e := range p.errs {
		field := addMissingIndex(docRoot, t.full(e.field), e.value)
		errs = append(errs, &FileError{Path: path, Line: lineOf(docRoot, field), Field: field, Reason: e.reason})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	for _, w := range p.warns {
		field, reason, _ := strings.Cut(w, ": ")
		warns = append(warns, &FileError{Path: path, Line: lineOf(docRoot, t.full(field)), Field: t.full(field), Reason: reason, Err: ErrIgnored})
	}
	warns = append(warns, nodeWarnings(path, docRoot, t, pod, opts)...)
	var strs []string
	for _, w := range warns {
		strs = append(strs, w.Field+": "+w.Reason)
	}
	line := lineOf(docRoot, t.full("metadata.name"))
	refLines := map[string]int{}
	for _, r := range References(pod) {
		if l := lineOf(docRoot, t.full(r.Field)); l > 0 {
			refLines[r.Field] = l
		}
	}
	for _, r := range ClaimReferences(pod) {
		if l := lineOf(docRoot, t.full(r.Field)); l > 0 {
			refLines[r.Field] = l
		}
	}
	if _, ok := pod.Annotations[AnnotationWaitFor]; ok {
		refLines[WaitForField] = lineOf(docRoot, t.full(WaitForField))
	}
	return &Pod{
		RefLines:      refLines,
		Pod:           pod,
		Path:          path,
		Doc:           docIndex,
		Hash:          uid,
		Warnings:      strs,
		Line:          line,
		WarningErrors: warns,
	}, nil
}

// podUID is the static pod's UID: the first 32 hex characters of the SHA-256
// of the canonical JSON of the pod as decoded (before defaulting), the file
// path and the node name. kubelet hashes the same three things.
func podUID(canonical []byte, path, nodeName string) string {
	h := sha256.New()
	h.Write(canonical)
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write([]byte(nodeName))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// applyIdentity gives the pod its static-pod identity as kubelet's
// pkg/kubelet/config/common.go applyDefaults does: name "<name>-<node>"
// (node lower-cased), namespace "default" when empty, the UID, the config
// annotations and spec.nodeName.
func applyIdentity(pod *v1.Pod, uid, nodeName string, now time.Time) {
	pod.Name = pod.Name + "-" + strings.ToLower(nodeName)
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	pod.UID = types.UID(uid)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationConfigHash] = uid
	pod.Annotations[AnnotationConfigSource] = "file"
	pod.Annotations[AnnotationConfigSeen] = now.UTC().Format(time.RFC3339Nano)
	// Kubernetes node names are lowercase (kubelet lowercases the hostname
	// or --hostname-override, and so does podvisor's CLI).
	pod.Spec.NodeName = strings.ToLower(nodeName)
}

// metadataWarnings reports metadata and status fields that podvisor sets
// itself or never reads.
func metadataWarnings(pod *v1.Pod, p *problems) {
	if pod.UID != "" {
		p.warn(ignoredWarning("metadata.uid", "the UID is derived from the manifest content, path and node"))
	}
	if pod.GenerateName != "" {
		p.warn(ignoredWarning("metadata.generateName", "static pods are named <name>-<node>"))
	}
	if !reflect.ValueOf(pod.Status).IsZero() {
		p.warn(ignoredWarning("status", "status is observed, not desired"))
	}
}
