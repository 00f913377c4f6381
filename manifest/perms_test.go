package manifest

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/test/prereq"
)

// TestScanInsecureRefused: without AllowInsecure, a manifest, its
// directory, or the directory holding a symlinked manifest's target that
// someone other than root could change is not used: no pod from it, an
// error (wrapping ErrInsecure) naming the path, the reason and the way
// out; a pod that was running from it keeps its last good version (what
// the file held while it was secure, not what was written since); once
// fixed, the file is read again.
func TestScanInsecureRefused(t *testing.T) {
	prereq.Root(t, "to chown files to another user")
	root := t.TempDir()
	dir := filepath.Join(root, "m")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "web.yaml")
	writeFile(t, path, basePod)
	sc := newScanner(dir, node, slog.New(slog.DiscardHandler))
	insecure := func(s Snapshot, path, reason string) {
		t.Helper()
		for _, e := range s.Errors {
			if errors.Is(e, ErrInsecure) && e.Path == path && strings.Contains(e.Reason, "not used: ") &&
				strings.Contains(e.Reason, reason) && strings.Contains(e.Reason, "--allow-insecure-manifests") {
				return
			}
		}
		t.Errorf("errors %v, want one for %s: %s", s.Errors, path, reason)
	}
	image := func(s Snapshot) string {
		if len(s.Pods) != 1 {
			return ""
		}
		return s.Pods[0].Pod.Spec.Containers[0].Image
	}

	// A new world-writable file is not a pod.
	os.Chmod(path, 0o666)
	s, _ := rescan(sc)
	if len(s.Pods) != 0 {
		t.Fatalf("a world-writable manifest became pods %v", keys(s))
	}
	insecure(s, path, path+": mode 0666 is group- or world-writable")
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %v besides the error", s.Warnings)
	}

	// Fixed: it is read.
	os.Chmod(path, 0o644)
	s, _ = rescan(sc)
	if image(s) != "busybox:1.36" || s.Pods[0].Err != nil || len(s.Errors) != 0 {
		t.Fatalf("fixed file: pods %v errors %v", keys(s), s.Errors)
	}
	good := s.Pods[0]

	// Made writable by others and rewritten: the running pod keeps the
	// version read while the file was secure.
	os.Chmod(path, 0o666)
	os.WriteFile(path, []byte(strings.Replace(basePod, "busybox:1.36", "evil:1", 1)), 0o666)
	s, _ = rescan(sc)
	if image(s) != "busybox:1.36" || s.Pods[0].Hash != good.Hash || !errors.Is(s.Pods[0].Err, ErrInsecure) {
		t.Fatalf("insecure rewritten file: pods %v (image %q) errors %v", keys(s), image(s), s.Errors)
	}
	insecure(s, path, "mode 0666")

	// Another owner: the same.
	os.Chmod(path, 0o644)
	os.Chown(path, 1000, 1000)
	s, _ = rescan(sc)
	if image(s) != "busybox:1.36" {
		t.Fatalf("file of uid 1000: image %q", image(s))
	}
	insecure(s, path, "owned by uid 1000, not root")

	// Fixed again: what it holds now runs.
	os.Chown(path, 0, 0)
	s, _ = rescan(sc)
	if image(s) != "evil:1" || len(s.Errors) != 0 {
		t.Fatalf("fixed again: image %q errors %v", image(s), s.Errors)
	}

	// The directory world-writable: nothing new is read, pods kept.
	writeFile(t, path, basePod)
	os.Chmod(dir, 0o777)
	s, _ = rescan(sc)
	if image(s) != "evil:1" || !errors.Is(s.Pods[0].Err, ErrInsecure) {
		t.Fatalf("insecure dir: pods %v image %q", keys(s), image(s))
	}
	insecure(s, dir, dir+": mode 0777")
	os.Chmod(dir, 0o755)
	s, _ = rescan(sc)
	if image(s) != "busybox:1.36" || len(s.Errors) != 0 {
		t.Fatalf("fixed dir: image %q errors %v", image(s), s.Errors)
	}

	// A symlink into a world-writable directory (sticky, as /tmp): its
	// target is secure, but others could swap it.
	shared := filepath.Join(root, "shared")
	os.Mkdir(shared, 0o755)
	os.Chmod(shared, os.ModeSticky|0o777)
	target := filepath.Join(shared, "db.yaml")
	writeFile(t, target, strings.Replace(basePod, "name: web", "name: db", 1))
	link := filepath.Join(dir, "db.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	s, _ = rescan(sc)
	if len(s.Pods) != 1 {
		t.Fatalf("symlink into a world-writable dir: pods %v", keys(s))
	}
	insecure(s, link, shared+": mode 0777 is group- or world-writable")
	insecure(s, link, "(holds the symlink target of "+link+")")

	// The target's directory fixed: the link is used.
	os.Chmod(shared, 0o755)
	s, _ = rescan(sc)
	if len(s.Pods) != 2 || len(s.Errors) != 0 {
		t.Fatalf("fixed target dir: pods %v errors %v", keys(s), s.Errors)
	}

	// AllowInsecure: used, with a warning.
	sc.opts.AllowInsecure = true
	os.Chmod(path, 0o666)
	s, _ = rescan(sc)
	if len(s.Pods) != 2 || len(s.Errors) != 0 || len(s.Warnings) != 1 || !errors.Is(s.Warnings[0], ErrInsecure) {
		t.Fatalf("allowed: pods %v errors %v warnings %v", keys(s), s.Errors, s.Warnings)
	}
}

// TestValidateInsecure: podvisor validate says why an insecure file would
// not be used.
func TestValidateInsecure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	writeFile(t, path, basePod)
	os.Chmod(path, 0o646)
	for _, target := range []string{dir, path} {
		r := Validate([]string{target}, node, ParseOptions{})
		if r.Valid() || len(r.Errors) != 1 || !errors.Is(r.Errors[0], ErrInsecure) || !strings.Contains(r.Errors[0].Error(), path+": mode 0646") {
			t.Errorf("validate %s: %+v", target, r.Errors)
		}
		if r := Validate([]string{target}, node, ParseOptions{AllowInsecure: true}); !r.Valid() || len(r.Warnings) != 1 {
			t.Errorf("validate --allow-insecure-manifests %s: errors %v warnings %v", target, r.Errors, r.Warnings)
		}
	}
}

// TestScanInsecureHop: a manifest reached through a symlink that sits in
// a directory others can write is not used, though the file and the
// directory its path resolves to are root's: that link can be pointed
// elsewhere between any check and the read, so the file is checked on
// the descriptor it is read from, every hop on the way.
func TestScanInsecureHop(t *testing.T) {
	prereq.Root(t, "to own the files as root")
	root := t.TempDir()
	dir, shared, real := filepath.Join(root, "m"), filepath.Join(root, "shared"), filepath.Join(root, "real")
	for _, d := range []string{dir, shared, real} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(shared, os.ModeSticky|0o777)
	writeFile(t, filepath.Join(real, "web.yaml"), basePod)
	if err := os.Symlink(real, filepath.Join(shared, "hop")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "web.yaml")
	if err := os.Symlink(filepath.Join(shared, "hop", "web.yaml"), link); err != nil {
		t.Fatal(err)
	}
	sc := newScanner(dir, node, slog.New(slog.DiscardHandler))
	s, _ := rescan(sc)
	if len(s.Pods) != 0 {
		t.Fatalf("a manifest through a link in a world-writable dir became pods %v", keys(s))
	}
	found := false
	for _, e := range s.Errors {
		if errors.Is(e, ErrInsecure) && e.Path == link && strings.Contains(e.Reason, shared) && strings.Contains(e.Reason, "holds the symlink") {
			found = true
		}
	}
	if !found {
		t.Errorf("errors %v, want one naming %s as holding the symlink", s.Errors, shared)
	}
	// The hop moved to a directory only root writes: used.
	os.Chmod(shared, 0o755)
	if s, _ = rescan(sc); len(s.Pods) != 1 || len(s.Errors) != 0 {
		t.Fatalf("fixed hop: pods %v errors %v", keys(s), s.Errors)
	}
}
