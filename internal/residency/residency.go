package residency

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mapping is one range of the process's address space that maps its
// executable.
type Mapping struct {
	Start, End uint64
	Perms      string // as /proc/self/maps: r-xp, r--p, rw-p
}

// Report says what Release did.
type Report struct {
	// RSSBefore and RSSAfter are the process's resident set, in bytes.
	RSSBefore, RSSAfter uint64
	// Released is how many bytes of the executable's read-only mappings
	// were advised away (their length, not their resident part).
	Released uint64
	// Advice is the advice the kernel took: "pageout+dontneed", or
	// "dontneed" where it lacks MADV_PAGEOUT.
	Advice string
	// FaultAround is "off" once the kernel maps only the touched page
	// of those mappings on a later fault, or why it still maps its
	// neighbours with it.
	FaultAround string
}

// Release gives back what start-up used and the rest does not need (see
// the package doc). An error says why the executable's pages were not
// advised away; the heap is returned anyway.
func Release() (Report, error) {
	var rep Report
	rep.RSSBefore = rss()
	debug.FreeOSMemory()
	maps, err := executableMappings()
	if err == nil {
		rep.FaultAround = "off"
		if ferr := noFaultAround(maps); ferr != nil {
			rep.FaultAround = "on: " + ferr.Error()
		}
		rep.Released, rep.Advice, err = advise(maps)
	}
	rep.RSSAfter = rss()
	return rep, err
}

// executableMappings returns the read-only mappings of the running
// executable, found by its device and inode (a binary replaced on disk
// since keeps both).
func executableMappings() ([]Mapping, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return nil, fmt.Errorf("executable: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	all, err := parseMaps(f, unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	if err != nil {
		return nil, err
	}
	var ro []Mapping
	for _, m := range all {
		if !strings.Contains(m.Perms, "w") {
			ro = append(ro, m)
		}
	}
	if len(ro) == 0 {
		return nil, fmt.Errorf("no read-only mapping of the executable (inode %d) in /proc/self/maps", st.Ino)
	}
	return ro, nil
}

// parseMaps returns the mappings of /proc/<pid>/maps's text r that map
// the file of the given device and inode.
func parseMaps(r io.Reader, major, minor uint32, ino uint64) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// start-end perms offset major:minor inode [path]
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		if n, err := strconv.ParseUint(f[4], 10, 64); err != nil || n != ino || ino == 0 {
			continue
		}
		ma, mi, ok := hexPair(f[3], ":")
		if !ok || ma != uint64(major) || mi != uint64(minor) {
			continue
		}
		start, end, ok := hexPair(f[0], "-")
		if !ok || end <= start {
			return nil, fmt.Errorf("/proc/self/maps: bad range %q", f[0])
		}
		out = append(out, Mapping{Start: start, End: end, Perms: f[1]})
	}
	return out, sc.Err()
}

// hexPair parses s as two hexadecimal numbers separated by sep
// ("7f00-7f10", "fe:00").
func hexPair(s, sep string) (a, b uint64, ok bool) {
	x, y, ok := strings.Cut(s, sep)
	if !ok {
		return 0, 0, false
	}
	a, err1 := strconv.ParseUint(x, 16, 64)
	b, err2 := strconv.ParseUint(y, 16, 64)
	return a, b, err1 == nil && err2 == nil
}

// advise asks the kernel to reclaim the mappings' pages (MADV_PAGEOUT,
// Linux 5.4: it frees those no other process maps), then drops this
// process's page table entries for the rest (MADV_DONTNEED: on a
// read-only private file mapping that is all it does; a page another
// process maps, a log driver running the same binary say, stays theirs
// in the page cache).
func advise(maps []Mapping) (uint64, string, error) {
	var n uint64
	name := "pageout+dontneed"
	for _, m := range maps {
		if err := madvise(m, unix.MADV_PAGEOUT); err == unix.EINVAL {
			name = "dontneed"
		} else if err != nil {
			return n, name, fmt.Errorf("madvise pageout %x-%x (%s): %w", m.Start, m.End, m.Perms, err)
		}
		if err := madvise(m, unix.MADV_DONTNEED); err != nil {
			return n, name, fmt.Errorf("madvise dontneed %x-%x (%s): %w", m.Start, m.End, m.Perms, err)
		}
		n += m.End - m.Start
	}
	return n, name, nil
}

func madvise(m Mapping, advice uintptr) error {
	// The range is not Go memory: it is passed as numbers, never made a
	// pointer.
	_, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(m.Start), uintptr(m.End-m.Start), advice)
	if e != 0 {
		return e
	}
	return nil
}

// rss is the process's resident set in bytes (statm's second field), 0
// when it cannot be read.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
