package mounts

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// A provisioned directory is made 0777 with the fsGroup on its root once;
// what a pod did to it later is never undone; its marker keeps its reclaim
// policy for when the claim is gone; RemoveClaim removes it. A storage
// request the filesystem cannot enforce is a warning, never an error.
func TestPrepareProvisionedClaim(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	root := t.TempDir()
	gid := int64(2345)
	s := ClaimStorage{Root: root, Dir: "default_data", Claim: "default/data", Delete: true, Request: 1 << 20}
	warning, err := PrepareClaim(s, &gid, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if warning != nil && !errors.Is(warning, ErrQuota) {
		t.Errorf("warning %v does not wrap ErrQuota", warning)
	}
	dir := filepath.Join(root, "default_data")
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Gid != 2345 || st.Mode&0o7777 != 0o2777 {
		t.Errorf("new directory: gid %d mode %o, want 2345 2777", st.Gid, st.Mode&0o7777)
	}
	// A pod made it its own (postgres: 0700): a second preparation, for
	// another fsGroup too, leaves it.
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	other := int64(99)
	if _, err := PrepareClaim(s, &other, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Gid != 2345 || st.Mode&0o7777 != 0o700 {
		t.Errorf("prepared again: gid %d mode %o, want 2345 700 untouched", st.Gid, st.Mode&0o7777)
	}
	got, err := ProvisionedClaims(root)
	if err != nil || len(got) != 1 || got[0] != (ProvisionedClaim{Dir: "default_data", Claim: "default/data", Delete: true}) {
		t.Fatalf("ProvisionedClaims = %+v, %v", got, err)
	}
	// Retain now: recorded.
	s.Delete = false
	if _, err := PrepareClaim(s, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := ProvisionedClaims(root); len(got) != 1 || got[0].Delete {
		t.Errorf("after Retain: %+v", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RemoveClaim(root, "default_data"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("directory after RemoveClaim: %v", err)
	}
	if got, _ := ProvisionedClaims(root); len(got) != 0 {
		t.Errorf("markers after RemoveClaim: %+v", got)
	}
	for _, bad := range []string{"", ".", "..", "a/b", ".podvisor"} {
		if err := RemoveClaim(root, bad); err == nil {
			t.Errorf("RemoveClaim(%q) took it", bad)
		}
	}
}

// A PersistentVolume's path: local must be an existing directory; hostPath
// is checked by its type.
func TestPreparePersistentVolumeClaim(t *testing.T) {
	dir := t.TempDir()
	if _, err := PrepareClaim(ClaimStorage{Path: filepath.Join(dir, "missing")}, nil, nil, false); err == nil {
		t.Error("a local volume's missing path was taken")
	}
	if _, err := PrepareClaim(ClaimStorage{Path: dir}, nil, nil, false); err != nil {
		t.Error(err)
	}
	create := v1.HostPathDirectoryOrCreate
	p := filepath.Join(dir, "made")
	if _, err := PrepareClaim(ClaimStorage{Path: p, HostPath: &v1.HostPathVolumeSource{Path: p, Type: &create}}, nil, nil, false); err != nil {
		t.Error(err)
	}
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		t.Errorf("DirectoryOrCreate: %v", err)
	}
}
