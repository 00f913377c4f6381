package manifest

import (
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/podvisor/podvisor/test/prereq"
)

// Scanner tests: the single step the Source loop runs, driven with the
// events the watcher would deliver.

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestScanEventRules(t *testing.T) {
	const v1img, v2img = "busybox:1.36", "busybox:1.37"
	v2 := strings.Replace(basePod, v1img, v2img, 1)
	type step struct {
		do    func(t *testing.T, dir string, sc *scanner) // change files, feed events
		mode  scanMode
		image string // image of web after the scan; "" means no pod
	}
	write := func(data string, evs ...fileEvent) func(*testing.T, string, *scanner) {
		return func(t *testing.T, dir string, sc *scanner) {
			writeFile(t, filepath.Join(dir, "web.yaml"), data)
			for _, ev := range evs {
				sc.fileEvent("web.yaml", ev)
			}
		}
	}
	events := func(evs ...fileEvent) func(*testing.T, string, *scanner) {
		return func(t *testing.T, dir string, sc *scanner) {
			for _, ev := range evs {
				sc.fileEvent("web.yaml", ev)
			}
		}
	}
	nothing := func(*testing.T, string, *scanner) {}

	tests := []struct {
		name  string
		start string // web.yaml before the first scan; "" for none
		steps []step
	}{
		{"close-write is read", basePod, []step{
			{write(v2, evModify, evClosed), scanEvents, v2img},
		}},
		{"written but not closed is never read, even by relists", basePod, []step{
			{write(v2, evModify), scanEvents, v1img},
			{nothing, scanRelist, v1img},
			{nothing, scanRelist, v1img},
			{nothing, scanRelist, v1img},
			{events(evClosed), scanEvents, v2img},
		}},
		{"a new file being written is not a pod", "", []step{
			{write(basePod, evCreate, evModify), scanEvents, ""},
			{nothing, scanRelist, ""},
			{nothing, scanRelist, ""},
			{events(evClosed), scanEvents, v1img},
		}},
		{"moved-to is read", basePod, []step{
			{write(v2, evClosed), scanEvents, v2img}, // IN_MOVED_TO maps to evClosed
		}},
		{"delete keeps the pod until the scan finds the file gone", basePod, []step{
			{events(evRemove), scanEvents, v1img}, // the file is still there
			{func(t *testing.T, dir string, sc *scanner) {
				if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
					t.Fatal(err)
				}
				sc.fileEvent("web.yaml", evRemove)
			}, scanEvents, ""},
		}},
		{"deleted and being re-created keeps the old pod", basePod, []step{
			{func(t *testing.T, dir string, sc *scanner) {
				if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
					t.Fatal(err)
				}
				sc.fileEvent("web.yaml", evRemove)
				writeFile(t, filepath.Join(dir, "web.yaml"), "apiVersion: v1\n")
				sc.fileEvent("web.yaml", evCreate)
				sc.fileEvent("web.yaml", evModify)
			}, scanEvents, v1img},
			{write(v2, evModify, evClosed), scanEvents, v2img},
		}},
		{"changed without any event: read once two relists agree", basePod, []step{
			{write(v2), scanEvents, v1img},
			{nothing, scanRelist, v1img},
			{nothing, scanRelist, v2img},
		}},
		{"created with no write seen (a hard link whose other name is gone): two relists", "", []step{
			{write(basePod, evCreate), scanEvents, ""},
			{nothing, scanRelist, ""},
			{nothing, scanRelist, v1img},
		}},
		{"touch is not a change", basePod, []step{
			{func(t *testing.T, dir string, sc *scanner) {
				path := filepath.Join(dir, "web.yaml")
				fi, _ := os.Stat(path)
				if err := os.Chtimes(path, fi.ModTime().Add(3e9), fi.ModTime().Add(3e9)); err != nil {
					t.Fatal(err)
				}
				sc.fileEvent("web.yaml", evAttrib)
			}, scanEvents, v1img},
			{nothing, scanRelist, v1img},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.start != "" {
				writeFile(t, filepath.Join(dir, "web.yaml"), tt.start)
			}
			sc := newScanner(dir, node, discard())
			sc.scan(scanRelist) // the first scan reads everything
			for i, st := range tt.steps {
				st.do(t, dir, sc)
				s, _ := sc.scan(st.mode)
				got := ""
				if p := podOf(s, "default/web-node-1"); p != nil {
					got = p.Pod.Spec.Containers[0].Image
					if p.Err != nil {
						got += " (kept: " + p.Err.Error() + ")"
					}
				}
				if got != st.image {
					t.Fatalf("step %d: image %q, want %q (errors %v)", i, got, st.image, s.Errors)
				}
				if len(s.Errors) != 0 {
					t.Fatalf("step %d: errors %v: a partial file was read", i, s.Errors)
				}
			}
		})
	}

	t.Run("symlink and hard link creations are complete", func(t *testing.T) {
		dir, elsewhere := t.TempDir(), t.TempDir()
		sc := newScanner(dir, node, discard())
		sc.scan(scanRelist)
		writeFile(t, filepath.Join(elsewhere, "a.yaml"), named("a"))
		writeFile(t, filepath.Join(elsewhere, "b.yaml"), named("b"))
		if err := os.Symlink(filepath.Join(elsewhere, "a.yaml"), filepath.Join(dir, "a.yaml")); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(elsewhere, "b.yaml"), filepath.Join(dir, "b.yaml")); err != nil {
			t.Fatal(err)
		}
		sc.fileEvent("a.yaml", evCreate)
		sc.fileEvent("b.yaml", evCreate)
		s, _ := sc.scan(scanEvents)
		if !hasPods("default/a-node-1", "default/b-node-1")(s) {
			t.Errorf("pods %v", keys(s))
		}
	})

	t.Run("a dot-entry change re-reads symlinked files only", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, ".v1.yaml"), basePod)
		if err := os.Symlink(".v1.yaml", filepath.Join(dir, "web.yaml")); err != nil {
			t.Fatal(err)
		}
		sc := newScanner(dir, node, discard())
		sc.scan(scanRelist)
		writeFile(t, filepath.Join(dir, ".v1.yaml"), v2)
		if sc.fileEvent(".v1.yaml", evModify) {
			t.Errorf("modifying a dotfile asked for a rescan")
		}
		if !sc.fileEvent(".v1.yaml", evClosed) {
			t.Errorf("closing a dotfile did not ask for a rescan")
		}
		s, _ := sc.scan(scanEvents)
		if p := podOf(s, "default/web-node-1"); p == nil || p.Pod.Spec.Containers[0].Image != v2img {
			t.Errorf("pods %+v", s.Pods)
		}
	})
}

func TestOverflowRelistsEverything(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	writeFile(t, path, basePod)
	src := NewSource(SourceOptions{
		Dir:      dir,
		NodeName: node,
	})
	sc := src.newScanner()
	sc.scan(scanRelist)

	// A write whose close event was lost in the overflow.
	writeFile(t, path, named("api"))
	sc.fileEvent("web.yaml", evModify)
	if !src.handle(sc, watchEvent{overflow: true}) {
		t.Fatal("an overflow did not ask for a rescan")
	}
	if !sc.fullRead || sc.state[path].modified {
		t.Fatalf("after an overflow: fullRead %v, modified %v; want every file read", sc.fullRead, sc.state[path].modified)
	}
	s, _ := sc.scan(scanEvents)
	if !hasPods("default/api-node-1")(s) {
		t.Errorf("pods %v, want the content written before the overflow", keys(s))
	}
	if sc.fullRead {
		t.Errorf("fullRead still set after the relist")
	}
	if !src.handle(sc, watchEvent{dir: true}) {
		t.Errorf("a directory event did not ask for a rescan")
	}
}

func TestScanPerDocumentLastKnownGood(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pods.yaml")
	db := named("db")
	writeFile(t, path, basePod+"---\n"+db)
	sc := newScanner(dir, node, discard())
	first, _ := rescan(sc)
	if !hasPods("default/db-node-1", "default/web-node-1")(first) {
		t.Fatalf("pods %v", keys(first))
	}
	uid := map[string]string{}
	for _, p := range first.Pods {
		uid[p.Key()] = p.Hash
	}

	// Document 0 changes validly, document 1 breaks: the first takes effect,
	// the second keeps its last good pod.
	writeFile(t, path, strings.Replace(basePod, "1.36", "1.37", 1)+"---\n"+db+"    volumeDevices: [{name: d, devicePath: /dev/xvda}]\n")
	s, changed := rescan(sc)
	if !changed {
		t.Fatal("no change reported")
	}
	web, dbp := podOf(s, "default/web-node-1"), podOf(s, "default/db-node-1")
	if web == nil || web.Hash == uid["default/web-node-1"] || web.Err != nil {
		t.Errorf("document 0: %+v, want the new valid version", web)
	}
	if dbp == nil || dbp.Hash != uid["default/db-node-1"] || dbp.Err == nil || dbp.Doc != 1 {
		t.Errorf("document 1: %+v, want the last good pod with Err", dbp)
	}
	if len(s.Errors) != 1 || s.Errors[0].Line != 18 || !strings.Contains(s.Errors[0].Error(), "volumeDevices") {
		t.Errorf("errors %v, want one at line 18", s.Errors)
	}
	if dbp != nil && dbp.Err != nil && dbp.Err.Error() != s.Errors[0].Error() {
		t.Errorf("Err %v, want the document's error %v", dbp.Err, s.Errors[0])
	}

	// A problem of the whole file keeps every document's last good pod.
	writeFile(t, path, "\n")
	s, _ = rescan(sc)
	if len(s.Pods) != 2 || s.Pods[0].Err == nil || s.Pods[1].Err == nil || len(s.Errors) != 1 {
		t.Errorf("empty file: pods %+v errors %v", s.Pods, s.Errors)
	}

	// An invalid document inserted in front: the documents after it move,
	// and a valid document naming a pod wins over a kept one.
	writeFile(t, path, "kind: Pod\n---\n"+basePod+"---\n"+db)
	s, _ = rescan(sc)
	if !hasPods("default/db-node-1", "default/web-node-1")(s) || s.Pods[0].Err != nil || s.Pods[1].Err != nil || len(s.Errors) != 1 {
		t.Errorf("documents moved: pods %+v errors %v", s.Pods, s.Errors)
	}
	if p := podOf(s, "default/db-node-1"); p == nil || p.Hash != uid["default/db-node-1"] || p.Doc != 2 {
		t.Errorf("db: %+v, want the same UID at document 2", p)
	}

	// A valid version without a document removes that document's pod.
	writeFile(t, path, basePod)
	s, _ = rescan(sc)
	if !hasPods("default/web-node-1")(s) || len(s.Errors) != 0 {
		t.Errorf("pods %v errors %v", keys(s), s.Errors)
	}
}

// readState decodes the state file.
func readState(t *testing.T, stateDir string) persistedState {
	t.Helper()
	data, err := os.ReadFile(StateFile(stateDir))
	if err != nil {
		t.Fatal(err)
	}
	var ps persistedState
	if err := json.Unmarshal(data, &ps); err != nil {
		t.Fatal(err)
	}
	return ps
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func TestScanPersistedLastKnownGood(t *testing.T) {
	dir, stateDir := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "pods.yaml")
	newSc := func(nodeName string) *scanner {
		src := NewSource(SourceOptions{
			Dir:      dir,
			NodeName: nodeName,
			StateDir: stateDir,
		})
		return src.newScanner()
	}
	writeFile(t, path, basePod+"---\n"+named("db"))
	sc := newSc(node)
	good, _ := sc.scan(scanRelist)
	writeFile(t, path, basePod+"---\n"+named("db")+"    volumeDevices: [{name: d, devicePath: /dev/xvda}]\n")
	rescan(sc)

	ps := readState(t, stateDir)
	if docs := ps.Files[path]; len(docs) != 2 || len(docs[1].Pods) != 1 || docs[1].Pods[0].Pod.Name != "db-node-1" {
		t.Fatalf("state %+v", ps)
	}
	fi, err := os.Stat(StateFile(stateDir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v, %v; want 0600 (Secrets may be in it)", fi.Mode(), err)
	}
	ino := inode(t, StateFile(stateDir))
	rescan(sc)
	if inode(t, StateFile(stateDir)) != ino {
		t.Errorf("the state file was rewritten though nothing changed")
	}

	// Restart with the file still broken: document 1 keeps its pod.
	s, _ := newSc(node).scan(scanRelist)
	db := podOf(s, "default/db-node-1")
	if db == nil || db.Err == nil || db.Hash != podOf(good, "default/db-node-1").Hash {
		t.Fatalf("after restart: %+v, want the persisted pod with Err", s.Pods)
	}
	if web := podOf(s, "default/web-node-1"); web == nil || web.Err != nil {
		t.Errorf("web: %+v", web)
	}
	if !reflectEqualJSON(t, db.Pod, podOf(good, "default/db-node-1").Pod) {
		t.Errorf("the persisted pod differs from the one that ran")
	}

	// A state for another node name is not used.
	if s, _ := newSc("other-node").scan(scanRelist); podOf(s, "default/db-other-node") != nil || len(s.Pods) != 1 {
		t.Errorf("another node's state was used: %v", keys(s))
	}

	// Deleting the file drops its entry.
	sc = newSc(node)
	sc.scan(scanRelist)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	rescan(sc)
	if ps := readState(t, stateDir); len(ps.Files) != 0 {
		t.Errorf("state after delete: %+v", ps.Files)
	}
}

func reflectEqualJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return string(ja) == string(jb)
}

func TestScanDuplicateWinnerPersisted(t *testing.T) {
	dir, stateDir := t.TempDir(), t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	newSc := func() *scanner {
		src := NewSource(SourceOptions{
			Dir:      dir,
			NodeName: node,
			StateDir: stateDir,
		})
		return src.newScanner()
	}
	winner := func(s Snapshot) string {
		if len(s.Pods) != 1 {
			t.Fatalf("pods %+v", s.Pods)
		}
		return s.Pods[0].Path
	}

	// b.yaml runs; podvisor stops; a.yaml (sorting first) appears meanwhile.
	writeFile(t, b, basePod)
	newSc().scan(scanRelist)
	writeFile(t, a, basePod+"  hostname: a\n")
	s, _ := newSc().scan(scanRelist)
	if winner(s) != b {
		t.Errorf("after restart %s runs, want the pod that ran before (b.yaml)", winner(s))
	}
	if len(s.Errors) != 1 || !errors.Is(s.Errors[0], ErrDuplicate) || s.Errors[0].Path != a ||
		!strings.Contains(s.Errors[0].Reason, "also defined in "+b) {
		t.Errorf("errors %v, want one on a.yaml naming b.yaml", s.Errors)
	}

	// Restart again with both: the recorded winner still wins.
	sc := newSc()
	s, _ = sc.scan(scanRelist)
	if winner(s) != b {
		t.Errorf("second restart: %s runs", winner(s))
	}
	if ps := readState(t, stateDir); ps.Winners["Pod default/web-node-1"] != b {
		t.Errorf("winners %v", ps.Winners)
	}

	// Removing the winner promotes the other.
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	s, _ = rescan(sc)
	if winner(s) != a || len(s.Errors) != 0 {
		t.Errorf("after removing b.yaml: %s runs, errors %v", winner(s), s.Errors)
	}
	if ps := readState(t, stateDir); ps.Winners["Pod default/web-node-1"] != a {
		t.Errorf("winners %v", ps.Winners)
	}

	// With no state and no previous snapshot, the name sorting first wins.
	writeFile(t, b, basePod)
	if s := Load(dir, node); winner(s) != a {
		t.Errorf("Load: %s wins, want a.yaml", winner(s))
	}
}

func TestScanPermissions(t *testing.T) {
	prereq.Root(t, "to chown files to another user")
	var logs logBuffer
	root := t.TempDir()
	dir := filepath.Join(root, "m")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "web.yaml")
	writeFile(t, path, basePod)
	sc := newScanner(dir, node, slog.New(slog.NewTextHandler(&logs, nil)))
	sc.opts.AllowInsecure = true // warnings; TestScanInsecureRefused: errors
	warnings := func() []string {
		t.Helper()
		s, _ := rescan(sc)
		var out []string
		for _, w := range s.Warnings {
			if !errors.Is(w, ErrInsecure) {
				t.Errorf("%v does not wrap ErrInsecure", w)
			}
			out = append(out, w.Error())
		}
		if len(s.Pods) != 1 {
			t.Errorf("a permission problem changed the pods: %v", keys(s))
		}
		return out
	}
	want := func(what string, got []string, substrings ...string) {
		t.Helper()
		if len(got) != len(substrings) {
			t.Fatalf("%s: warnings %q, want %d", what, got, len(substrings))
		}
		for i, sub := range substrings {
			if !strings.Contains(got[i], sub) {
				t.Errorf("%s: warning %q, want %q", what, got[i], sub)
			}
		}
	}

	want("clean", warnings())
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	want("world-writable file", warnings(), path+": mode 0666 is group- or world-writable")
	warnings()
	warnings()
	if n := strings.Count(logs.String(), "mode 0666"); n != 1 {
		t.Errorf("logged %d times over three scans, want once:\n%s", n, logs.String())
	}
	if err := os.Chmod(path, 0o664); err != nil {
		t.Fatal(err)
	}
	want("group-writable file", warnings(), "mode 0664")
	if n := strings.Count(logs.String(), "mode 0664"); n != 1 {
		t.Errorf("a changed warning logged %d times, want once", n)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	want("file of another user", warnings(), "owned by uid 1000, not root")
	if err := os.Chown(path, 0, 0); err != nil {
		t.Fatal(err)
	}

	// The directory, and a parent without the sticky bit.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	want("world-writable directory", warnings(), dir+": mode 0777")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	want("sticky parent like /tmp", warnings())
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	want("world-writable parent", warnings(), root+": mode 0777")
	if err := os.Chmod(root, 0o700); err != nil {
		t.Fatal(err)
	}

	// A symlinked manifest: its target counts.
	target := filepath.Join(root, "target.yaml")
	writeFile(t, target, named("linked"))
	if err := os.Chmod(target, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "linked.yaml")); err != nil {
		t.Fatal(err)
	}
	s, _ := rescan(sc)
	if len(s.Warnings) != 1 || s.Warnings[0].Path != target || !strings.Contains(s.Warnings[0].Reason, "symlink target of "+filepath.Join(dir, "linked.yaml")) {
		t.Errorf("warnings %v", s.Warnings)
	}

	// Another trusted owner can be configured; root stays trusted.
	if err := os.Remove(filepath.Join(dir, "linked.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	sc.trustedUID = 4242
	want("file of the trusted user", warnings())
	sc.trustedUID = 4243
	want("file of an untrusted user", warnings(), "owned by uid 4242, not root or uid 4243")
}

func TestScanObjects(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: conf}
  data: {key: value}
- apiVersion: v1
  kind: Secret
  metadata: {name: creds, namespace: kube-system}
  stringData: {password: hunter2}
- apiVersion: v1
  kind: Pod
  metadata: {name: web}
  spec: {containers: [{name: app, image: busybox}]}
`)
	writeFile(t, filepath.Join(dir, "b.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\ndata: {other: x}\n")
	s := Load(dir, node)
	if !hasPods("default/web-node-1")(s) {
		t.Errorf("pods %v", keys(s))
	}
	cm := s.ConfigMaps["default/conf"]
	if cm == nil || cm.Data["key"] != "value" || len(s.ConfigMaps) != 1 {
		t.Errorf("configmaps %v", s.ConfigMaps)
	}
	sec := s.Secrets["kube-system/creds"]
	if sec == nil || string(sec.Data["password"]) != "hunter2" || sec.Type != "Opaque" || sec.StringData != nil {
		t.Errorf("secrets %+v", s.Secrets)
	}
	if len(s.Errors) != 1 || !errors.Is(s.Errors[0], ErrDuplicate) ||
		s.Errors[0].Error() != filepath.Join(dir, "b.yaml")+":4: metadata.name: ConfigMap default/conf is also defined in "+filepath.Join(dir, "a.yaml")+", which is used; this one is ignored" {
		t.Errorf("errors %v", s.Errors)
	}

	// Changes of objects are changes of the snapshot.
	sc := newScanner(dir, node, discard())
	rescan(sc)
	if _, changed := rescan(sc); changed {
		t.Errorf("unchanged objects reported as a change")
	}
	writeFile(t, filepath.Join(dir, "a.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {key: new}\n")
	s, changed := rescan(sc)
	if !changed || s.ConfigMaps["default/conf"].Data["key"] != "new" {
		t.Errorf("changed %v configmaps %v", changed, s.ConfigMaps)
	}
}

// TestScanObjectLastKnownGood: Snapshot.Objects says where each object in
// use comes from; an object whose document becomes invalid keeps its last
// good version, marked in ObjectErrors, and loses the mark when fixed.
func TestScanObjectLastKnownGood(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	good := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\ndata: {key: good}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"
	writeFile(t, path, good)
	sc := newScanner(dir, node, discard())
	s, _ := rescan(sc)
	if len(s.Objects) != 2 || s.Objects[0].ID() != "ConfigMap default/conf" || s.Objects[0].Path != path || s.Objects[0].Line != 4 ||
		s.Objects[1].ID() != "Secret default/s" || s.ObjectErrors != nil {
		t.Fatalf("objects %+v errors %v", s.Objects, s.ObjectErrors)
	}
	writeFile(t, path, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\ndata: {key: [bad]}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n")
	s, _ = rescan(sc)
	err := s.ObjectErrors["ConfigMap default/conf"]
	if s.ConfigMaps["default/conf"].Data["key"] != "good" || err == nil || !strings.Contains(err.Error(), "c.yaml:5: data[key]") ||
		len(s.ObjectErrors) != 1 || len(s.Objects) != 2 {
		t.Errorf("broken: configmap %v object errors %v", s.ConfigMaps["default/conf"], s.ObjectErrors)
	}
	writeFile(t, path, good)
	if s, _ = rescan(sc); s.ObjectErrors != nil {
		t.Errorf("fixed: object errors %v", s.ObjectErrors)
	}
}
