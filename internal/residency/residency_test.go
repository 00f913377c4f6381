package residency

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMain: with RESIDENCY_HOLD set, the test binary is the other
// process of TestReleaseSharedPages: it touches every page of its
// read-only mappings, says so, and holds them until its stdin closes.
// With RESIDENCY_FAULTAROUND set, it is TestNoFaultAround's process,
// whose fault-around no other test turned off before.
func TestMain(m *testing.M) {
	if os.Getenv("RESIDENCY_FAULTAROUND") != "" {
		faultAroundMain()
	}
	if os.Getenv("RESIDENCY_HOLD") != "" {
		maps, err := executableMappings()
		if err != nil {
			panic(err)
		}
		if err := touch(maps); err != nil {
			panic(err)
		}
		os.Stdout.WriteString("holding\n")
		bufio.NewReader(os.Stdin).ReadString('\n')
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// touch reads a byte of every page of maps through /proc/self/mem, which
// faults each into this process's page tables.
func touch(maps []Mapping) error {
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		return err
	}
	defer mem.Close()
	page := uint64(os.Getpagesize())
	buf := make([]byte, 1)
	for _, m := range maps {
		for a := m.Start; a < m.End; a += page {
			if _, err := mem.ReadAt(buf, int64(a)); err != nil {
				return err
			}
		}
	}
	return nil
}

func TestParseMaps(t *testing.T) {
	const maps = `00400000-02103000 r-xp 00000000 fe:00 9979455                            /usr/bin/podvisor
02103000-04188000 r--p 01d03000 fe:00 9979455                            /usr/bin/podvisor
04188000-04238000 rw-p 03d88000 fe:00 9979455                            /usr/bin/podvisor
04238000-04290000 rw-p 00000000 00:00 0
c000000000-c004000000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--p 00000000 fe:01 9979455                    /other/fs/same-inode
7f0000002000-7f0000003000 r-xp 00000000 fe:00 9979456                    /usr/lib/other
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
`
	got, err := parseMaps(strings.NewReader(maps), 0xfe, 0, 9979455)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{Start: 0x400000, End: 0x2103000, Perms: "r-xp"},
		{Start: 0x2103000, End: 0x4188000, Perms: "r--p"},
		{Start: 0x4188000, End: 0x4238000, Perms: "rw-p"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseMaps = %+v, want %+v", got, want)
	}
	if _, err := parseMaps(strings.NewReader("zz-00 r-xp 0 fe:00 1 /x\n"), 0xfe, 0, 1); err == nil {
		t.Fatal("a bad range was accepted")
	}
}

// TestExecutableMappings: the test binary's own code is in a read-only
// mapping that Release would advise; no writable one is among them.
func TestExecutableMappings(t *testing.T) {
	maps, err := executableMappings()
	if err != nil {
		t.Fatal(err)
	}
	pc := uint64(reflect.ValueOf(TestExecutableMappings).Pointer())
	found := false
	for _, m := range maps {
		if strings.Contains(m.Perms, "w") {
			t.Errorf("writable mapping %+v would be advised", m)
		}
		if m.Start <= pc && pc < m.End {
			found = true
		}
	}
	if !found {
		t.Fatalf("this test's code (%#x) is in none of %+v", pc, maps)
	}
}

// marker is written at run time: a page of the writable data that
// Release must leave as it is.
var marker = []byte("before")

// TestReleaseDropsTouchedPages touches every page of the executable's
// read-only mappings (reading them through /proc/self/mem faults them in),
// then checks that Release leaves few of them resident, that the code
// still runs and that written data kept its value.
func TestReleaseDropsTouchedPages(t *testing.T) {
	copy(marker, "after!")
	maps, err := executableMappings()
	if err != nil {
		t.Fatal(err)
	}
	if err := touch(maps); err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, m := range maps {
		total += (m.End - m.Start) / uint64(os.Getpagesize())
	}
	before := resident(t, maps)
	if before < total*9/10 {
		t.Fatalf("touching %d pages left only %d resident: the test cannot tell", total, before)
	}
	rep, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	after := resident(t, maps)
	t.Logf("%d of %d pages resident before, %d after (%s; RSS %d → %d KiB)",
		before, total, after, rep.Advice, rep.RSSBefore>>10, rep.RSSAfter>>10)
	if after > before/3 {
		t.Errorf("%d of %d touched pages still resident after Release", after, before)
	}
	if rep.Released == 0 || rep.RSSAfter >= rep.RSSBefore {
		t.Errorf("report %+v: nothing released", rep)
	}
	if string(marker) != "after!" {
		t.Errorf("written data is %q after Release", marker)
	}
}

// TestReleaseSharedPages: pages another process maps too (a log driver
// running the same binary) leave this process's resident set as well.
func TestReleaseSharedPages(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	other := exec.Command(exe)
	other.Env = append(os.Environ(), "RESIDENCY_HOLD=1")
	in, err := other.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := other.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); other.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "holding\n" {
		t.Fatalf("the other process said %q (%v)", line, err)
	}
	maps, err := executableMappings()
	if err != nil {
		t.Fatal(err)
	}
	if err := touch(maps); err != nil {
		t.Fatal(err)
	}
	before := resident(t, maps)
	if _, err := Release(); err != nil {
		t.Fatal(err)
	}
	after := resident(t, maps)
	t.Logf("pages mapped by two processes: %d resident here before, %d after", before, after)
	// The whole binary stays in the page cache for the other process,
	// so each page this one touches again comes back, with its
	// neighbours where fault-around is still on: a small test binary
	// gets back a good part of itself in a few calls. Without the
	// drop, every page would stay.
	if after > before*3/4 {
		t.Errorf("%d of %d shared pages still resident here after Release", after, before)
	}
}

// TestNoFaultAround: in a fresh process (the test binary run again), a
// page touched in a read-only mapping of the executable comes back with
// its neighbours while fault-around is on, and alone once noFaultAround
// turned it off.
func TestNoFaultAround(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "RESIDENCY_FAULTAROUND=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var before, after, windows int
	line := strings.TrimSpace(string(out))
	if strings.HasPrefix(line, "skip: ") {
		t.Skip(line)
	}
	if _, err := fmt.Sscanf(line, "windows %d: neighbours mapped in %d before, %d after", &windows, &before, &after); err != nil {
		t.Fatalf("the process said %q: %v", out, err)
	}
	t.Log(line)
	if before < windows*3/4 {
		t.Fatalf("fault-around mapped neighbours in only %d of %d windows before it was turned off: the test cannot tell", before, windows)
	}
	if after > 0 {
		t.Errorf("neighbours still mapped in %d of %d windows after noFaultAround", after, windows)
	}
}

// faultAroundMain is TestNoFaultAround's process: it counts the windows
// where a touched page's neighbours came back with it, before and after
// noFaultAround, prints both and exits.
func faultAroundMain() {
	exe, err := os.Executable()
	if err == nil {
		// The whole binary in the page cache: fault-around maps only
		// what is there.
		_, err = os.ReadFile(exe)
	}
	maps, err2 := executableMappings()
	if err = errors.Join(err, err2); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	var m Mapping // the largest read-only mapping: most room for windows
	for _, c := range maps {
		if c.End-c.Start > m.End-m.Start {
			m = c
		}
	}
	const windows = 8
	before, err := neighboursMapped(m, windows, 0)
	if err == nil {
		err = noFaultAround(maps)
		if errors.Is(err, unix.EINVAL) && strings.Contains(err.Error(), "WP_ASYNC") {
			fmt.Println("skip: this kernel cannot turn fault-around off:", err)
			os.Exit(0)
		}
	}
	var after int
	if err == nil {
		after, err = neighboursMapped(m, windows, 1)
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Printf("windows %d: neighbours mapped in %d before, %d after\n", windows, before, after)
	os.Exit(0)
}

// neighboursMapped drops n windows of m from this process's page tables,
// each the 64 KiB (fault-around's span) aligned block a page touched in
// it would bring back, then touches one page of each window and counts
// the windows where most of the other pages came back with it. shift picks other
// windows than shift 0 does, so no window was touched before.
func neighboursMapped(m Mapping, n, shift int) (int, error) {
	const span = 64 << 10
	page := uint64(os.Getpagesize())
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		return 0, err
	}
	defer mem.Close()
	blocks := (m.End - m.Start) / span
	if blocks/uint64(n+1) < 2 {
		return 0, fmt.Errorf("mapping %+v too small for %d windows", m, n)
	}
	mapped := 0
	for i := 0; i < n; i++ {
		start := (m.Start+span-1)/span*span + (blocks/uint64(n+1)*uint64(i)+uint64(shift))*span
		w := Mapping{Start: start, End: start + span}
		if err := madvise(w, unix.MADV_DONTNEED); err != nil {
			return 0, err
		}
		if _, err := mem.ReadAt(make([]byte, 1), int64(start+span/2)); err != nil {
			return 0, err
		}
		present, err := presentPages(w)
		if err != nil {
			return 0, err
		}
		// Fault-around maps the whole window (the page cache holds
		// it); without it, the touched page and what the runtime
		// itself touched meanwhile (its type data, say) come back.
		if present > span/page/2 {
			mapped++
		}
	}
	return mapped, nil
}

// presentPages counts the pages of m present in this process's page
// tables (/proc/self/pagemap's bit 63).
func presentPages(m Mapping) (uint64, error) {
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return 0, err
	}
	defer pm.Close()
	page := uint64(os.Getpagesize())
	buf := make([]byte, 8*(m.End-m.Start)/page)
	if _, err := pm.ReadAt(buf, int64(m.Start/page*8)); err != nil {
		return 0, err
	}
	var n uint64
	for i := 0; i < len(buf); i += 8 {
		if binary.LittleEndian.Uint64(buf[i:])>>63 == 1 {
			n++
		}
	}
	return n, nil
}

// resident counts the pages of maps present in this process's page
// tables (/proc/self/pagemap's bit 63).
func resident(t *testing.T, maps []Mapping) uint64 {
	t.Helper()
	var n uint64
	for _, m := range maps {
		p, err := presentPages(m)
		if err != nil {
			t.Fatal(err)
		}
		n += p
	}
	return n
}
