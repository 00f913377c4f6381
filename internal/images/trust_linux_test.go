package images

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/test/prereq"
	"time"
)

// TestWatcherWarnsOfInsecurePermissions: an images dir or archive that
// others can change is warned of once while it lasts; with AllowInsecure
// it is imported all the same, without it nothing is imported until it is
// fixed (the warning says "not imported: " and why).
func TestWatcherWarnsOfInsecurePermissions(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "allowed", false: "refused"}[allow], func(t *testing.T) { testInsecurePermissions(t, allow) })
	}
}

func testInsecurePermissions(t *testing.T, allow bool) {
	tests := []struct {
		name       string
		dirMode    os.FileMode
		tarMode    os.FileMode
		tarOwner   int // -1: unchanged
		wantSuffix string
	}{
		{name: "clean", dirMode: 0o755, tarMode: 0o644, tarOwner: -1},
		{name: "world-writable dir", dirMode: 0o777, tarMode: 0o644, tarOwner: -1, wantSuffix: "mode 0777 is group- or world-writable: other users can change what podvisor runs as root"},
		{name: "group-writable archive", dirMode: 0o755, tarMode: 0o664, tarOwner: -1, wantSuffix: "a.tar: mode 0664 is group- or world-writable: other users can change what podvisor runs as root"},
		{name: "archive not root's", dirMode: 0o755, tarMode: 0o644, tarOwner: 65534, wantSuffix: "a.tar: owned by uid 65534, not root: that user can change what podvisor runs as root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.tarOwner >= 0 {
				prereq.Root(t, "to chown")
			}
			dir := t.TempDir()
			tar := filepath.Join(dir, "a.tar")
			write(t, tar, "v")
			if err := os.Chmod(tar, tt.tarMode); err != nil {
				t.Fatal(err)
			}
			if tt.tarOwner >= 0 {
				if err := os.Chown(tar, tt.tarOwner, -1); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(dir, tt.dirMode); err != nil {
				t.Fatal(err)
			}
			var warnings []string
			f := newFake()
			// The test's own user owns the temporary directory.
			w := New(Options{Dir: dir, Importer: f, TrustedUID: os.Getuid(), AllowInsecure: allow,
				OnWarning: func(msg string) { warnings = append(warnings, msg) }})
			for i := range 3 {
				// A new version of the archive is checked again.
				write(t, tar, strings.Repeat("v", i+1))
				w.full = true
				w.pass(t.Context(), time.Now())
			}
			if !allow && tt.wantSuffix != "" {
				if n := len(f.of("a.tar")); n != 0 {
					t.Errorf("imported %d times, want none", n)
				}
				if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "not imported: ") || !strings.Contains(warnings[0], tt.wantSuffix+" (fix with chmod go-w and chown root, or run with --allow-insecure-manifests)") {
					t.Errorf("warnings = %q, want one saying not imported: … %q", warnings, tt.wantSuffix)
				}
				// Fixed: imported at the next retry.
				os.Chmod(dir, 0o755)
				os.Chmod(tar, 0o644)
				os.Chown(tar, os.Getuid(), -1)
				w.pass(t.Context(), time.Now().Add(time.Hour))
				if n := len(f.of("a.tar")); n != 1 {
					t.Errorf("fixed: imported %d times, want 1", n)
				}
				return
			}
			if n := len(f.of("a.tar")); n != 3 {
				t.Errorf("imported %d times, want 3: warnings must not refuse", n)
			}
			switch {
			case tt.wantSuffix == "" && len(warnings) != 0:
				t.Errorf("warnings = %q, want none", warnings)
			case tt.wantSuffix != "" && (len(warnings) != 1 || !strings.HasSuffix(warnings[0], tt.wantSuffix)):
				t.Errorf("warnings = %q, want one ending in %q", warnings, tt.wantSuffix)
			}
		})
	}
}

// TestWatcherArchiveThroughLink: an archive reached through a symlink is
// checked where the link leads: one in a directory others can write
// (sticky bit or not: they could replace it) is not imported, and the
// warning names the directory, the file and why; with AllowInsecure it is
// imported with that warning.
func TestWatcherArchiveThroughLink(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(map[bool]string{true: "allowed", false: "refused"}[allow], func(t *testing.T) {
			dir, shared := t.TempDir(), t.TempDir()
			if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(shared, "busybox.tar")
			write(t, target, "v")
			link := filepath.Join(dir, "busybox.tar")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			var warnings []string
			f := newFake()
			w := New(Options{Dir: dir, Importer: f, TrustedUID: os.Getuid(), AllowInsecure: allow,
				OnWarning: func(msg string) { warnings = append(warnings, msg) }})
			w.pass(t.Context(), time.Now())
			want := shared + ": mode 0777 is group- or world-writable (holds the file " + link + " reached through a symlink): other users can change what podvisor runs as root"
			if allow {
				if n := len(f.of("busybox.tar")); n != 1 {
					t.Errorf("imported %d times, want 1", n)
				}
				if len(warnings) != 1 || warnings[0] != want {
					t.Errorf("warnings = %q, want [%q]", warnings, want)
				}
				return
			}
			if n := len(f.of("busybox.tar")); n != 0 {
				t.Errorf("imported %d times, want none", n)
			}
			if len(warnings) != 1 || warnings[0] != "not imported: "+want+" (fix with chmod go-w and chown root, or run with --allow-insecure-manifests)" {
				t.Errorf("warnings = %q, want one saying not imported: %q", warnings, want)
			}
		})
	}
}

// TestWatcherImportsWhatWasChecked: an archive replaced after its check
// (renamed over, or its link pointed elsewhere) is not what is imported:
// the Importer reads the file that was checked, under the archive's name.
func TestWatcherImportsWhatWasChecked(t *testing.T) {
	for _, how := range []string{"renamed over", "link re-pointed"} {
		t.Run(how, func(t *testing.T) {
			dir, other := t.TempDir(), t.TempDir()
			good := filepath.Join(other, "good.tar")
			evil := filepath.Join(other, "evil.tar")
			write(t, good, "checked")
			write(t, evil, "swapped")
			// Others could write the swapped file: it must never be read.
			if err := os.Chmod(evil, 0o666); err != nil {
				t.Fatal(err)
			}
			archive := filepath.Join(dir, "busybox.tar")
			if how == "renamed over" {
				if err := os.Link(good, archive); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Symlink(good, archive); err != nil {
				t.Fatal(err)
			}
			swapped := false
			testHookBeforeImport = func(path string) {
				if path != archive {
					t.Errorf("hook for %s, want %s", path, archive)
				}
				tmp := filepath.Join(dir, ".swap")
				var err error
				if how == "renamed over" {
					err = os.Link(evil, tmp)
				} else {
					err = os.Symlink(evil, tmp)
				}
				if err == nil {
					err = os.Rename(tmp, archive)
				}
				if err != nil {
					t.Fatal(err)
				}
				swapped = true
			}
			t.Cleanup(func() { testHookBeforeImport = nil })
			f := newFake()
			w := New(Options{Dir: dir, Importer: f, TrustedUID: os.Getuid()})
			w.pass(t.Context(), time.Now())
			if !swapped {
				t.Fatal("the archive was not swapped before its import")
			}
			got := f.of("busybox.tar")
			if len(got) != 1 || got[0].content != "checked" {
				t.Fatalf("imports = %+v, want one of busybox.tar with the checked content", got)
			}
		})
	}
}
