package residency

import (
	"bufio"
	"encoding/binary"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// TestMain: with RESIDENCY_HOLD set, the test binary is the other
// process of TestReleaseSharedPages: it touches every page of its
// read-only mappings, says so, and holds them until its stdin closes.
func TestMain(m *testing.M) {
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
	// so each page this one touches again comes back with its
	// neighbours (the kernel's fault-around, 64 KiB): a small test
	// binary gets back a good part of itself in a few calls. Without
	// the drop, every page would stay.
	if after > before*3/4 {
		t.Errorf("%d of %d shared pages still resident here after Release", after, before)
	}
}

// resident counts the pages of maps present in this process's page
// tables (/proc/self/pagemap's bit 63).
func resident(t *testing.T, maps []Mapping) uint64 {
	t.Helper()
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	page := uint64(os.Getpagesize())
	var n uint64
	for _, m := range maps {
		ents := make([]byte, (m.End-m.Start)/page*8)
		if _, err := pm.ReadAt(ents, int64(m.Start/page*8)); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(ents); i += 8 {
			if binary.LittleEndian.Uint64(ents[i:])&(1<<63) != 0 {
				n++
			}
		}
	}
	return n
}
