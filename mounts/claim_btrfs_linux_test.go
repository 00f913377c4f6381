package mounts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// On btrfs a provisioned directory is a subvolume only where quotas can
// be set when it is made (a subvolume drops out of snapshots and
// one-device backups of the filesystem): before the operator enabled
// quotas it is a plain directory, its storage request a warning naming
// `btrfs quota enable` and saying it stays unenforced; once they are, a
// new claim is a subvolume limited by its qgroup; one made before a crash
// is finished; a subvolume a container made inside is named in the
// warning at the next prepare; RemoveClaim deletes the subvolume without
// a walk, the subvolumes in it (a read-only snapshot too) first.
func TestPrepareProvisionedClaimBtrfs(t *testing.T) {
	mnt := loopBtrfs(t)
	s := ClaimStorage{Root: mnt, Dir: "default_old", Claim: "default/old", Delete: true, Request: 8 << 20}
	warning, err := PrepareClaim(s, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	fix := "(btrfs quota enable " + mnt + ")"
	if !errors.Is(warning, ErrQuota) || !strings.Contains(errors.Unwrap(warning).Error(), fix) || !strings.Contains(warning.Error(), "plain directory") {
		t.Errorf("quotas not enabled: warning %v, want one naming %q and the plain directory", warning, fix)
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
	if subvolume("default_old") {
		t.Error("the directory provisioned while quotas were not enabled is a subvolume")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run("btrfs", "quota", "enable", mnt)
	if how, err := ClaimQuota(mnt); how != "btrfs qgroup" || err != nil {
		t.Errorf("ClaimQuota once quotas are enabled: %q, %v", how, err)
	}
	// The plain directory made before stays unenforced, and says so.
	if warning, err := PrepareClaim(s, nil, nil, false); err != nil || !errors.Is(warning, ErrQuota) || !strings.Contains(warning.Error(), "not a subvolume") {
		t.Errorf("a plain directory made before: warning %v, error %v", warning, err)
	}
	s = ClaimStorage{Root: mnt, Dir: "default_data", Claim: "default/data", Delete: true, Request: 8 << 20}
	if warning, err := PrepareClaim(s, nil, nil, false); warning != nil || err != nil {
		t.Errorf("quotas enabled: warning %v, error %v", warning, err)
	}
	if !subvolume("default_data") {
		t.Error("the directory provisioned once quotas were enabled is not a subvolume")
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
	if got, _ := ProvisionedClaims(mnt); len(got) != 3 {
		t.Errorf("ProvisionedClaims: %+v, want default_old, default_data and default_crashed", got)
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
	// A container made a subvolume in its claim, and a read-only snapshot
	// of it deeper down: named at the next prepare, as its data escapes
	// the limit.
	data := filepath.Join(mnt, "default_data")
	if err := btrfsquota.Create(openFd(t, data), "nested"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "nested", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(data, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	run("btrfs", "subvolume", "snapshot", "-r", filepath.Join(data, "nested"), filepath.Join(data, "d", "snap"))
	warning, err = PrepareClaim(s, nil, nil, false)
	want := "subvolumes " + filepath.Join(data, "nested") + ", " + filepath.Join(data, "d", "snap") + " inside the claim are not counted against its limit"
	if err != nil || !errors.Is(warning, ErrQuota) || !strings.Contains(warning.Error(), want) {
		t.Errorf("subvolumes made inside the claim: warning %v, error %v; want one saying %q", warning, err, want)
	}
	// Removed: the nested subvolumes deleted first, the read-only
	// snapshot's files never unlinked one by one (they cannot be).
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
	// The subvolume is deleted, not walked: an immutable file in it,
	// which unlink refuses, goes with it.
	if _, err := PrepareClaim(s, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	pinned := filepath.Join(data, "pinned")
	if err := os.WriteFile(pinned, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("chattr", "+i", pinned)
	if err := RemoveClaim(mnt, "default_data"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a subvolume with an immutable file after RemoveClaim: %v", err)
	}
}

// userNSEnv names the filesystem TestClaimBtrfsUserNamespace's child
// works on; the child runs only when it is set.
const userNSEnv = "PODVISOR_TEST_BTRFS_USERNS"

// Where podvisor runs in a user namespace of its own (an unprivileged
// container on a btrfs host), the qgroup ioctls fail with EPERM whatever
// its capabilities there. Quotas enabled on the host: a new claim is a
// plain directory (the check, before it is made, says quotas cannot be
// set from here), one made a subvolume before is prepared with a warning
// naming CAP_SYS_ADMIN rather than failed, and RemoveClaim removes a
// subvolume, with one nested in it, as a directory.
func TestClaimBtrfsUserNamespace(t *testing.T) {
	if mnt := os.Getenv(userNSEnv); mnt != "" {
		userNSChild(t, mnt)
		return
	}
	mnt := loopBtrfs(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "btrfs", "quota", "enable", mnt).CombinedOutput(); err != nil {
		t.Fatalf("btrfs quota enable: %v\n%s", err, out)
	}
	for _, dir := range []string{"default_sub", "default_gone"} {
		if err := btrfsquota.Create(openFd(t, mnt), dir); err != nil {
			t.Fatal(err)
		}
	}
	gone := filepath.Join(mnt, "default_gone")
	if err := btrfsquota.Create(openFd(t, gone), "nested"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"f", "nested/f"} {
		if err := os.WriteFile(filepath.Join(gone, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestClaimBtrfsUserNamespace$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), userNSEnv+"="+mnt)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a user namespace: %v\n%s", err, out)
	}
	t.Logf("in a user namespace:\n%s", out)
}

func userNSChild(t *testing.T, mnt string) {
	const reason = "without CAP_SYS_ADMIN in the host's user namespace"
	if how, err := ClaimQuota(mnt); how != "btrfs qgroup" || !errors.Is(err, ErrQuota) || !strings.Contains(err.Error(), reason) {
		t.Errorf("ClaimQuota: %q, %v; want a warning saying %q", how, err, reason)
	}
	s := ClaimStorage{Root: mnt, Dir: "default_new", Claim: "default/new", Delete: true, Request: 8 << 20}
	warning, err := PrepareClaim(s, nil, nil, false)
	if err != nil || !errors.Is(warning, ErrQuota) || !strings.Contains(warning.Error(), reason) {
		t.Errorf("a new claim: warning %v, error %v; want a warning saying %q", warning, err, reason)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(mnt, "default_new"), &st); err != nil || st.Ino == 256 {
		t.Errorf("a new claim: %v, inode %d; want a plain directory", err, st.Ino)
	}
	s = ClaimStorage{Root: mnt, Dir: "default_sub", Claim: "default/sub", Delete: true, Request: 8 << 20}
	warning, err = PrepareClaim(s, nil, nil, false)
	if err != nil || !errors.Is(warning, ErrQuota) || !strings.Contains(warning.Error(), reason) {
		t.Errorf("a subvolume made before: warning %v, error %v; want a warning saying %q", warning, err, reason)
	}
	for _, dir := range []string{"default_gone", "default_sub", "default_new"} {
		if err := RemoveClaim(mnt, dir); err != nil {
			t.Errorf("RemoveClaim %s: %v", dir, err)
		}
		if _, err := os.Lstat(filepath.Join(mnt, dir)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after RemoveClaim: %v", dir, err)
		}
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
