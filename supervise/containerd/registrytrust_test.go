package containerd

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// captureWarnings returns a logger writing to a buffer and a function
// reading what was told.
func captureWarnings() (*slog.Logger, func() string) {
	var mu sync.Mutex
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))
	return log, func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestNodeCredentialsWarnsUntrusted: a config.json others could change is
// used (the daemon warns of it at start too) with a warning naming the
// file, why, and the fix; told once while it lasts, and again when it
// comes back after a fix.
func TestNodeCredentialsWarnsUntrusted(t *testing.T) {
	log, told := captureWarnings()
	dir := t.TempDir()
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, []byte(`{"auths": {"registry.example.com": {"username": "u", "password": "p"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o620); err != nil {
		t.Fatal(err)
	}
	creds := NodeCredentials(log, file)
	lookup := func() {
		t.Helper()
		got, err := creds(context.Background(), "registry.example.com/app:1", "registry.example.com")
		if err != nil || len(got) != 1 || got[0] != (Credential{"u", "p"}) {
			t.Fatalf("credentials = %v, %v; want u/p, used all the same", got, err)
		}
	}
	lookup()
	lookup()
	want := "registry credentials " + file + " is not trusted: " + file + ": mode 0620 is group- or world-writable: other users can change what podvisor runs as root (fix with chown root and chmod go-w, on the file and each directory named)"
	if out := told(); strings.Count(out, "level=WARN") != 1 || !strings.Contains(out, want) {
		t.Fatalf("warnings:\n%s\nwant one with %q", out, want)
	}
	if strings.Contains(told(), `"p"`) || strings.Contains(told(), "password") {
		t.Fatalf("a warning shows the credentials:\n%s", told())
	}
	os.Chmod(file, 0o600)
	lookup()
	os.Chmod(file, 0o660)
	lookup()
	if n := strings.Count(told(), "level=WARN"); n != 2 {
		t.Fatalf("warnings after fix and relapse: %d, want 2:\n%s", n, told())
	}
}

// TestHostsTomlWarnsUntrusted: a hosts.toml others could change is warned
// of when a pull looks its host up, naming the file and why.
func TestHostsTomlWarnsUntrusted(t *testing.T) {
	log, told := captureWarnings()
	root := t.TempDir()
	dir := filepath.Join(root, "registry.example.com")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hosts := filepath.Join(dir, "hosts.toml")
	if err := os.WriteFile(hosts, []byte("server = \"https://registry.example.com\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostDir := checkedHostDir(root, newTrustWarnings(log))
	if got, err := hostDir("registry.example.com"); err != nil || got != dir {
		t.Fatalf("host dir = %q, %v; want %q", got, err, dir)
	}
	if out := told(); out != "" {
		t.Fatalf("sound hosts.toml warned of:\n%s", out)
	}
	os.Chmod(hosts, 0o664)
	if got, err := hostDir("registry.example.com"); err != nil || got != dir {
		t.Fatalf("host dir = %q, %v; want %q, used all the same", got, err, dir)
	}
	want := "hosts.toml " + hosts + " is not trusted: " + hosts + ": mode 0664 is group- or world-writable"
	if out := told(); strings.Count(out, "level=WARN") != 1 || !strings.Contains(out, want) {
		t.Fatalf("warnings:\n%s\nwant one with %q", out, want)
	}
}
