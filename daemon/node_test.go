package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFindLogDriver(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "podvisor")
	if got := findLogDriver(self); got != self {
		t.Errorf("without a driver: %q, want podvisor itself", got)
	}
	driver := filepath.Join(dir, "podvisor-log-driver")
	os.WriteFile(driver, []byte("#!/bin/sh\n"), 0o644)
	if got := findLogDriver(self); got != self {
		t.Errorf("non-executable driver used: %q", got)
	}
	os.Chmod(driver, 0o755)
	if got := findLogDriver(self); got != driver {
		t.Errorf("driver beside podvisor not used: %q", got)
	}
}

// TestNodeNameRemembered: the node name is remembered in the state dir, so
// a later hostname change renames no pod; --node-name overrides it.
func TestNodeNameRemembered(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "node-name"), []byte("old-host\n"), 0o644)
	if got, err := NodeName("", dir); err != nil || got != "old-host" {
		t.Fatalf("remembered name = %q, %v", got, err)
	}
	if got, _ := NodeName("New-Name", dir); got != "new-name" {
		t.Fatalf("flag = %q, want lowercased new-name", got)
	}
	if got, _ := NodeName("", dir); got != "new-name" {
		t.Fatalf("after the flag, remembered = %q", got)
	}
	fresh := t.TempDir()
	h, _ := os.Hostname()
	if got, _ := NodeName("", fresh); got != strings.ToLower(h) {
		t.Fatalf("default = %q, want the lowercased hostname %q", got, strings.ToLower(h))
	}
	// Without a state dir (podvisor validate): nothing remembered.
	if got, _ := NodeName("", ""); got != strings.ToLower(h) {
		t.Fatalf("without a state dir = %q, want %q", got, strings.ToLower(h))
	}
}

// TestNodeNameFoundInvalid: a node name podvisor finds (remembered in the
// state dir, or the hostname) that Kubernetes would refuse stops podvisor
// at start, naming where it came from and --node-name; a given valid name
// replaces it.
func TestNodeNameFoundInvalid(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "node-name"), []byte("edge_7!\n"), 0o644)
	_, err := NodeName("", dir)
	if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "remembered in") || !strings.Contains(err.Error(), "--node-name") {
		t.Fatalf("remembered edge_7!: %v, want an ErrInvalid naming the file and --node-name", err)
	}
	if got, err := NodeName("edge-7", dir); err != nil || got != "edge-7" {
		t.Fatalf("--node-name edge-7 = %q, %v", got, err)
	}
}

// TestNodeNameFileUnwritten: a start whose node name is the one
// remembered does not write the file again.
func TestNodeNameFileUnwritten(t *testing.T) {
	dir := t.TempDir()
	if _, err := NodeName("box", dir); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "node-name")
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	// An mtime far in the past: any write would move it.
	old := before.ModTime().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	for _, given := range []string{"box", ""} {
		if got, err := NodeName(given, dir); err != nil || got != "box" {
			t.Fatalf("NodeName(%q) = %q, %v", given, got, err)
		}
	}
	if after, err := os.Stat(p); err != nil || !after.ModTime().Equal(old) {
		t.Errorf("node-name written again with the same name (mtime %v, was %v)", after.ModTime(), old)
	}
}
