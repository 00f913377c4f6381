package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/podvisor/podvisor/mounts"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// proc is what the sweep needs to know about one process.
type proc struct {
	ppid  int
	state byte // 'Z' for a zombie
	args  []string
}

// listProcs reads every process from /proc; processes that exit meanwhile
// are skipped.
func listProcs() map[int]proc {
	procs := map[int]proc{}
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parens.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		cmdline, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		procs[pid] = proc{ppid: ppid, state: f[0][0], args: args}
	}
	return procs
}

// namesPathUnder reports whether any argument is dir or a path inside it
// (a shim's "-address <dir>/containerd.sock", a socket, a bundle).
func namesPathUnder(args []string, dir string) bool {
	for _, a := range args {
		// Also catch "--address=<dir>/..." forms.
		if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			a = v
		}
		if a == dir || strings.HasPrefix(a, dir+"/") {
			return true
		}
	}
	return false
}

// killUnder SIGKILLs every process whose command line names a path inside
// dir, with all its descendants (the containers under a shim), and waits
// until they are gone. The calling process and its ancestors are spared.
func killUnder(dir string, logf func(string, ...any)) error {
	procs := listProcs()
	spare := map[int]bool{}
	for pid := os.Getpid(); pid > 1; pid = procs[pid].ppid {
		spare[pid] = true
		if _, ok := procs[pid]; !ok {
			break
		}
	}
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	victims := map[int]bool{}
	var mark func(int)
	mark = func(pid int) {
		if victims[pid] || spare[pid] {
			return
		}
		victims[pid] = true
		for _, c := range children[pid] {
			mark(c)
		}
	}
	for pid, p := range procs {
		if p.state != 'Z' && namesPathUnder(p.args, dir) {
			mark(pid)
		}
	}
	if len(victims) == 0 {
		return nil
	}
	// The whole set is computed before the first kill: a killed shim's
	// children would be reparented and lose their link to it.
	for pid := range victims {
		logf("killing leftover pid %d: %s", pid, strings.Join(procs[pid].args, " "))
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		alive := aliveOf(victims)
		if len(alive) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes still alive after SIGKILL: %v", alive)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

// aliveOf returns the pids that still exist and are not zombies.
func aliveOf(pids map[int]bool) []int {
	var alive []int
	for pid := range pids {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		alive = append(alive, pid)
	}
	sort.Ints(alive)
	return alive
}

// mountsUnder returns the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) { return mounts.Under(dir) }

// unmountUnder lazily unmounts everything mounted at or below dir, deepest
// first, repeating for stacked mounts.
func unmountUnder(dir string) error {
	for round := 0; round < 5; round++ {
		mps, err := mountsUnder(dir)
		if err != nil {
			return fmt.Errorf("read mounts: %w", err)
		}
		if len(mps) == 0 {
			return nil
		}
		for _, mp := range mps {
			if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil &&
				!errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("unmount %s: %w", mp, err)
			}
		}
	}
	mps, _ := mountsUnder(dir)
	if len(mps) > 0 {
		return fmt.Errorf("still mounted: %v", mps)
	}
	return nil
}

// deleteLink removes the network link name if it exists.
func deleteLink(name string) error {
	if _, err := net.InterfaceByName(name); err != nil {
		return nil // never created: no container joined the network
	}
	if err := ipCmd("link", "delete", name); err != nil {
		if _, gone := net.InterfaceByName(name); gone != nil {
			return nil
		}
		return fmt.Errorf("delete link %s: %w", name, err)
	}
	return nil
}

// removeNamespaceDirs removes the directories runc leaves for a containerd
// namespace outside Dir once its containers are gone: its state root and
// the parent cgroup of the default cgroup path /<namespace>/<id>, in every
// cgroup v1 hierarchy or in the v2 root. rmdir only removes empty
// directories, so a namespace still in use is left alone.
func removeNamespaceDirs(ns string) {
	if ns == "" || ns == "." || ns == ".." || strings.Contains(ns, "/") {
		return
	}
	_ = unix.Rmdir(filepath.Join("/run/containerd/runc", ns))
	_ = unix.Rmdir(filepath.Join("/sys/fs/cgroup", ns))
	ents, _ := os.ReadDir("/sys/fs/cgroup")
	for _, ent := range ents {
		if ent.IsDir() {
			_ = unix.Rmdir(filepath.Join("/sys/fs/cgroup", ent.Name(), ns))
		}
	}
}
