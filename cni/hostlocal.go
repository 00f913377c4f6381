package cni

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
	"golang.org/x/sys/unix"
)

// hostLocalDefaultDir is host-local's dataDir when its config names none.
const hostLocalDefaultDir = "/var/lib/cni/networks"

// hostLocalLockWait bounds the wait for host-local's lock.
const hostLocalLockWait = 5 * time.Second

// sweepHostLocal removes the address files that host-local IPAM left
// empty, for each plugin of list that uses it, and returns them. host-local
// reserves an address by creating its file and then writing the owner's
// container ID into it, both under an flock on "lock" in the network's
// dir: a plugin killed in between (podvisor's whole process group killed
// during a CNI ADD) leaves an empty file that no DEL can release, since
// DEL frees the files naming its container ID, and the address is lost to
// the pool for good. Under that same lock an empty file is such a leftover
// and nothing else.
func sweepHostLocal(list *libcni.NetworkConfigList) ([]string, error) {
	var removed []string
	var errs []error
	for _, p := range list.Plugins {
		var conf struct {
			IPAM struct {
				Type    string `json:"type"`
				DataDir string `json:"dataDir"`
			} `json:"ipam"`
		}
		if err := json.Unmarshal(p.Bytes, &conf); err != nil || conf.IPAM.Type != "host-local" {
			continue
		}
		dir := conf.IPAM.DataDir
		if dir == "" {
			dir = hostLocalDefaultDir
		}
		r, err := sweepHostLocalDir(filepath.Join(dir, list.Name))
		removed = append(removed, r...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// sweepHostLocalDir is sweepHostLocal for one network's dir.
func sweepHostLocalDir(dir string) ([]string, error) {
	lock, err := os.Open(filepath.Join(dir, "lock"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // nothing allocated yet
	}
	if err != nil {
		return nil, fmt.Errorf("host-local %s: %w", dir, err)
	}
	defer lock.Close()
	for deadline := time.Now().Add(hostLocalLockWait); ; time.Sleep(50 * time.Millisecond) {
		err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			return nil, fmt.Errorf("host-local %s: lock: %w", dir, err)
		}
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("host-local %s: %w", dir, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		// Address files are named by the address (IPv6 ':' escaped as '_').
		if !e.Type().IsRegular() || net.ParseIP(strings.ReplaceAll(name, "_", ":")) == nil {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() != 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("host-local %s: %w", dir, err))
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}
