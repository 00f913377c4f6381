package cni

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/containernetworking/cni/libcni"
)

// TestSweepHostLocal: the empty address file a host-local killed between
// creating and writing it leaves is removed, under host-local's lock;
// owned addresses, host-local's other files and other IPAMs' dirs stay.
func TestSweepHostLocal(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "pvnet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"lock":               "",
		"10.22.0.5":          "",               // killed mid-reservation
		"10.22.0.6":          "abc123\r\neth0", // owned
		"last_reserved_ip.0": "10.22.0.6",
		"fd00::5":            "",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	list, err := libcni.ConfListFromBytes([]byte(`{"cniVersion":"1.0.0","name":"pvnet","plugins":[
		{"type":"bridge","bridge":"pv0","ipam":{"type":"host-local","dataDir":"` + data + `","ranges":[[{"subnet":"10.22.0.0/24"}]]}},
		{"type":"portmap","capabilities":{"portMappings":true}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	removed, err := sweepHostLocal(list)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Sort(removed); !slices.Equal(removed, []string{"10.22.0.5", "fd00::5"}) {
		t.Errorf("removed %v, want the two empty address files", removed)
	}
	for _, keep := range []string{"lock", "10.22.0.6", "last_reserved_ip.0"} {
		if _, err := os.Stat(filepath.Join(dir, keep)); err != nil {
			t.Errorf("%s: %v, want it kept", keep, err)
		}
	}
	// No lock file: host-local never allocated there; nothing to do.
	if removed, err := sweepHostLocalDir(filepath.Join(data, "other")); err != nil || len(removed) != 0 {
		t.Errorf("sweep of a dir host-local never used: %v, %v", removed, err)
	}
}
