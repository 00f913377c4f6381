package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/podvisor/podvisor/test/prereq"
)

// event is one line of `go test -json` (cmd/test2json), build events
// included.
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

// counts are one package's top-level test results in one run.
type counts struct {
	pass, fail, skip int
}

// pkgRun is a package being read: its output so far, its counts, the
// last output line of each test and the tests that skipped.
type pkgRun struct {
	out     strings.Builder
	counts  counts
	last    map[string]string
	skipped []string
}

func main() {
	label := flag.String("label", "", "the run's name in the summary (e.g. \"containerd 2\")")
	results := flag.String("results", "", "directory of counts.tsv and logs/")
	summary := flag.Bool("summary", false, "print the summary of the rows in -results instead of reading go test -json")
	e2e := flag.String("e2e", "", "comma-separated module-relative packages the summary table lists")
	flag.Parse()
	if *results == "" || (!*summary && *label == "") {
		fmt.Fprintln(os.Stderr, "testsum: -results is required, and -label when reading go test -json")
		os.Exit(2)
	}
	var err error
	if *summary {
		err = printSummary(os.Stdout, *results, strings.Split(*e2e, ","))
	} else {
		err = read(os.Stdin, os.Stdout, *label, *results)
	}
	if err != nil {
		if !errors.Is(err, errFailed) { // the output says what failed
			fmt.Fprintln(os.Stderr, "testsum:", err)
		}
		os.Exit(1)
	}
}

// errFailed is read's and printSummary's error when a test or package
// failed: the output already says which.
var errFailed = errors.New("tests failed")

// read turns go test -json from r into go test's own output on w, writes
// each package's log and counts row under dir, and returns errFailed when
// anything failed.
func read(r io.Reader, w io.Writer, label, dir string) error {
	logs := filepath.Join(dir, "logs", slug(label))
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	rows, err := os.OpenFile(filepath.Join(dir, "counts.tsv"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer rows.Close()
	skips, err := os.OpenFile(filepath.Join(dir, "skipped.tsv"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer skips.Close()
	failed := false
	running := map[string]*pkgRun{}
	var order []string
	finish := func(pkg, status string) error {
		p := running[pkg]
		delete(running, pkg)
		log := filepath.Join(logs, slug(pkg)+".log")
		if err := os.WriteFile(log, []byte(p.out.String()), 0o644); err != nil {
			return err
		}
		if status == "FAIL" {
			failed = true
			fmt.Fprintf(w, "=== %s (%s) failed; its full output (also in %s):\n%s", pkg, label, log, p.out.String())
		} else {
			for _, l := range strings.SplitAfter(p.out.String(), "\n") {
				if strings.HasPrefix(l, "ok  ") || strings.HasPrefix(l, "?   ") {
					fmt.Fprint(w, l)
				}
			}
		}
		c := p.counts
		if _, err := fmt.Fprintf(rows, "%s\t%s\t%d\t%d\t%d\t%s\n", label, pkg, c.pass, c.fail, c.skip, status); err != nil {
			return err
		}
		for _, s := range p.skipped {
			if _, err := fmt.Fprintf(skips, "%s\t%s\t%s\n", label, pkg, s); err != nil {
				return err
			}
		}
		return nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(w, sc.Text()) // not go test -json: pass it on
			continue
		}
		if e.ImportPath != "" { // build events
			if e.Action == "build-output" {
				fmt.Fprint(w, e.Output)
			} else if e.Action == "build-fail" {
				failed = true
			}
			continue
		}
		p := running[e.Package]
		if p == nil {
			p = &pkgRun{last: map[string]string{}}
			running[e.Package] = p
			order = append(order, e.Package)
		}
		if e.Action == "skip" && e.Test != "" {
			// Every skipped test, subtests too: a skipped subtest is a
			// case not run as surely as a skipped test.
			p.skipped = append(p.skipped, e.Test+"\t"+p.last[e.Test])
			if strings.Contains(e.Test, "/") {
				p.counts.skip++
			}
		}
		switch {
		case e.Action == "output":
			p.out.WriteString(e.Output)
			if l := strings.TrimSpace(e.Output); e.Test != "" && l != "" && !strings.HasPrefix(l, "--- ") && !strings.HasPrefix(l, "=== ") {
				p.last[e.Test] = l
			}
		case e.Test != "" && !strings.Contains(e.Test, "/"):
			switch e.Action {
			case "pass":
				p.counts.pass++
			case "fail":
				p.counts.fail++
			case "skip":
				p.counts.skip++
			}
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			status := map[string]string{"pass": "ok", "fail": "FAIL", "skip": "skip"}[e.Action]
			if err := finish(e.Package, status); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// A package that never finished: go test was killed, or its output cut.
	for _, pkg := range order {
		if running[pkg] != nil {
			running[pkg].out.WriteString("testsum: no end of this package in go test's output\n")
			if err := finish(pkg, "FAIL"); err != nil {
				return err
			}
		}
	}
	if failed {
		return errFailed
	}
	return nil
}

// row is one line of counts.tsv.
type row struct {
	label, pkg string
	counts
	status string
}

// printSummary prints dir's counts.tsv: the rows of the e2e packages, the
// totals, and "N passed, N failed" last.
func printSummary(w io.Writer, dir string, e2e []string) error {
	data, err := os.ReadFile(filepath.Join(dir, "counts.tsv"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var rows []row
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 6 {
			continue
		}
		r := row{label: f[0], pkg: f[1], status: f[5]}
		r.pass, _ = strconv.Atoi(f[2])
		r.fail, _ = strconv.Atoi(f[3])
		r.skip, _ = strconv.Atoi(f[4])
		if r.status == "FAIL" && r.fail == 0 {
			r.fail = 1 // failed outside any test: TestMain, build, timeout
		}
		rows = append(rows, r)
	}
	// e2eName is pkg as -e2e names it, or "" when it names it not.
	e2eName := func(pkg string) string {
		for _, e := range e2e {
			if e = strings.Trim(e, "./ "); e != "" && (pkg == e || strings.HasSuffix(pkg, "/"+e)) {
				return e
			}
		}
		return ""
	}
	fmt.Fprintf(w, "\nend-to-end tests (top-level tests; full output under %s):\n", filepath.Join(dir, "logs"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tpackage\tpassed\tfailed\tskipped\tstatus")
	var total counts
	for _, r := range rows {
		total.pass += r.pass
		total.fail += r.fail
		total.skip += r.skip
		if name := e2eName(r.pkg); name != "" {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", r.label, name, r.pass, r.fail, r.skip, r.status)
		}
	}
	tw.Flush()
	skipped, err := os.ReadFile(filepath.Join(dir, "skipped.tsv"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	required := prereq.Required()
	if s := strings.TrimSpace(string(skipped)); s != "" {
		if required {
			fmt.Fprintln(w, "skipped (each a failure: PODVISOR_E2E_REQUIRED is set):")
		} else {
			fmt.Fprintln(w, "skipped:")
		}
		for _, l := range strings.Split(s, "\n") {
			fmt.Fprintln(w, "  "+strings.ReplaceAll(l, "\t", "  "))
		}
	}
	if required {
		total.fail += total.skip // each a failure, so "0 failed" is never a failed run
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", total.pass, total.fail, total.skip)
	if total.fail > 0 {
		return errFailed
	}
	return nil
}

// slug makes s a file name.
func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, s)
}
