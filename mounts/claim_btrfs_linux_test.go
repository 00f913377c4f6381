package mounts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/btrfsquota"
	"github.com/podvisor/podvisor/internal/projquota"
	"github.com/podvisor/podvisor/test/loopfs"
	"golang.org/x/sys/unix"
)

// What a storage request's limit returned decides: a filesystem that
// cannot enforce it is a warning that is ErrQuota and unwraps to the
// reason (the event names it); anything else fails the claim.
func TestQuotaOutcome(t *testing.T) {
	other := errors.New("read-only file system")
	for _, c := range []struct {
		name           string
		err            error
		warning, fatal bool
	}{
		{"enforced", nil, false, false},
		{"no project quotas", fmt.Errorf("%w: set project ID: (the filesystem has no project IDs)", projquota.ErrUnsupported), true, false},
		{"btrfs quotas not enabled", fmt.Errorf("%w: quotas are not enabled (btrfs quota enable /v)", btrfsquota.ErrUnsupported), true, false},
		{"another error", other, false, true},
	} {
		warning, fatal := quotaOutcome(c.err)
		if (warning != nil) != c.warning || (fatal != nil) != c.fatal {
			t.Errorf("%s: warning %v, error %v", c.name, warning, fatal)
			continue
		}
		if warning != nil && (!errors.Is(warning, ErrQuota) || errors.Unwrap(warning) != c.err) {
			t.Errorf("%s: warning %v: ErrQuota %t, unwraps to %v", c.name, warning, errors.Is(warning, ErrQuota), errors.Unwrap(warning))
		}
	}
}

// On btrfs a provisioned directory is a subvolume: its storage request is
// a warning naming `btrfs quota enable` until the operator enabled quotas,
// then its qgroup's limit; one made before a crash is finished; a plain
// directory made before keeps working, reported not enforced; RemoveClaim
// deletes the subvolume without a walk, or, when it holds another
// subvolume a container made, emptied.
func TestPrepareProvisionedClaimBtrfs(t *testing.T) {
	mnt := loopBtrfs(t)
	if err := os.Mkdir(filepath.Join(mnt, "default_old"), 0o777); err != nil {
		t.Fatal(err)
	}
	s := ClaimStorage{Root: mnt, Dir: "default_data", Claim: "default/data", Delete: true, Request: 8 << 20}
	warning, err := PrepareClaim(s, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	fix := "(btrfs quota enable " + mnt + ")"
	if !errors.Is(warning, ErrQuota) || !strings.Contains(errors.Unwrap(warning).Error(), fix) {
		t.Errorf("quotas not enabled: warning %v, want one naming %q", warning, fix)
	}
	if how, err := ClaimQuota(mnt); how != "btrfs qgroup" || !errors.Is(err, ErrQuota) || !strings.Contains(err.Error(), fix) {
		t.Errorf("ClaimQuota before quotas are enabled: %q, %v", how, err)
	}
	subvolume := func(dir string) bool {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(mnt, dir), &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino == 256
	}
	if !subvolume("default_data") {
		t.Error("the provisioned directory is not a subvolume")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "btrfs", "quota", "enable", mnt).CombinedOutput(); err != nil {
		t.Fatalf("btrfs quota enable: %v\n%s", err, out)
	}
	if how, err := ClaimQuota(mnt); how != "btrfs qgroup" || err != nil {
		t.Errorf("ClaimQuota once quotas are enabled: %q, %v", how, err)
	}
	if warning, err := PrepareClaim(s, nil, nil, false); warning != nil || err != nil {
		t.Errorf("quotas enabled: warning %v, error %v", warning, err)
	}
	// A subvolume made by a podvisor stopped before it marked it ready is
	// finished: limited, marked, listed for its removal.
	if err := btrfsquota.Create(openFd(t, mnt), "default_crashed"); err != nil {
		t.Fatal(err)
	}
	crashed := ClaimStorage{Root: mnt, Dir: "default_crashed", Claim: "default/crashed", Delete: true, Request: 4 << 20}
	if warning, err := PrepareClaim(crashed, nil, nil, false); warning != nil || err != nil {
		t.Errorf("a subvolume made before a crash: warning %v, error %v", warning, err)
	}
	if got, _ := ProvisionedClaims(mnt); len(got) != 2 {
		t.Errorf("ProvisionedClaims: %+v, want default_data and default_crashed", got)
	}
	if err := RemoveClaim(mnt, "default_crashed"); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(mnt, "default_data", "big")
	if err := os.WriteFile(big, make([]byte, 16<<20), 0o644); !errors.Is(err, unix.EDQUOT) {
		t.Errorf("writing 16 MiB into an 8 MiB claim: %v, want EDQUOT", err)
	}
	if err := os.Remove(big); err != nil {
		t.Fatal(err)
	}
	if err := unix.Syncfs(openFd(t, mnt)); err != nil { // the space back in the qgroup
		t.Fatal(err)
	}
	old := ClaimStorage{Root: mnt, Dir: "default_old", Claim: "default/old", Delete: true, Request: 8 << 20}
	if warning, err := PrepareClaim(old, nil, nil, false); err != nil || !errors.Is(warning, ErrQuota) || !strings.Contains(warning.Error(), "not a subvolume") {
		t.Errorf("a plain directory made before: warning %v, error %v", warning, err)
	}
	// A container made a subvolume in its claim.
	if err := btrfsquota.Create(openFd(t, filepath.Join(mnt, "default_data")), "nested"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "default_data", "nested", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"default_data", "default_old"} {
		if err := RemoveClaim(mnt, dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(mnt, dir)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after RemoveClaim: %v", dir, err)
		}
	}
	if got, _ := ProvisionedClaims(mnt); len(got) != 0 {
		t.Errorf("markers after RemoveClaim: %+v", got)
	}
	// Without a nested one, the subvolume is deleted, not walked: an
	// immutable file in it, which unlink refuses, goes with it.
	if _, err := PrepareClaim(s, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	pinned := filepath.Join(mnt, "default_data", "pinned")
	if err := os.WriteFile(pinned, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, "chattr", "+i", pinned).CombinedOutput(); err != nil {
		t.Fatalf("chattr +i: %v\n%s", err, out)
	}
	if err := RemoveClaim(mnt, "default_data"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(mnt, "default_data")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a subvolume with an immutable file after RemoveClaim: %v", err)
	}
}

func openFd(t *testing.T, path string) int {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// loopBtrfs is a loop-mounted btrfs of its own, quotas not enabled,
// unmounted and detached when the test ends.
func loopBtrfs(t *testing.T) string {
	t.Helper()
	return loopfs.FS(t, "btrfs", 128<<20)
}
