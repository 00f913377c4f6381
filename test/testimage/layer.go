package testimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// epoch is the fixed timestamp of every tar entry and of the image config,
// so that equal inputs give equal digests.
var epoch = time.Unix(0, 0).UTC()

// baseApplets are always linked, even when `busybox --list` cannot run
// (e.g. a busybox for another architecture).
var baseApplets = []string{
	"sh", "sleep", "httpd", "cat", "echo", "ls", "date", "touch", "hostname",
	"id", "mount", "ps", "env", "wget", "nc", "kill", "true", "false",
	"mkdir", "rm", "grep",
}

// baseDirs are the directories of every image and their modes.
var baseDirs = map[string]int64{
	"bin":     0o755,
	"dev":     0o755,
	"etc":     0o755,
	"proc":    0o555,
	"root":    0o700,
	"sys":     0o555,
	"tmp":     0o1777,
	"usr":     0o755,
	"usr/bin": 0o755,
	"var":     0o755,
	"var/www": 0o755,
}

const (
	passwd = "root:x:0:0:root:/root:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n"
)

// entry is one tar member.
type entry struct {
	hdr  tar.Header
	data []byte
}

func fileEntry(name string, mode int64, data []byte) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}, data: data}
}

func dirEntry(name string, mode int64) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode}}
}

func symlinkEntry(name, target string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}}
}

// writeTar writes entries in the given order with fixed owner and times.
func writeTar(w io.Writer, entries []entry) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		hdr := e.hdr
		hdr.ModTime = epoch
		hdr.Uid, hdr.Gid = 0, 0
		hdr.Uname, hdr.Gname = "", ""
		// PAX only when a name needs it; USTAR keeps output byte-stable
		// and readable by every importer.
		hdr.Format = tar.FormatUnknown
		if err := tw.WriteHeader(&hdr); err != nil {
			return fmt.Errorf("tar header %s: %w", hdr.Name, err)
		}
		if len(e.data) > 0 {
			if _, err := tw.Write(e.data); err != nil {
				return fmt.Errorf("tar %s: %w", hdr.Name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("close tar: %w", err)
	}
	return nil
}

// applets lists busybox's applets: baseApplets plus whatever the binary
// itself reports.
func applets(busybox string) []string {
	set := map[string]bool{}
	for _, a := range baseApplets {
		set[a] = true
	}
	if out, err := exec.Command(busybox, "--list").Output(); err == nil {
		for _, a := range strings.Fields(string(out)) {
			if a != "busybox" && !strings.ContainsAny(a, "/\x00") {
				set[a] = true
			}
		}
	}
	list := make([]string, 0, len(set))
	for a := range set {
		list = append(list, a)
	}
	sort.Strings(list)
	return list
}

// buildLayer returns the uncompressed layer tar.
func buildLayer(busybox string, extra map[string]string) ([]byte, error) {
	bbData, err := os.ReadFile(busybox)
	if err != nil {
		return nil, fmt.Errorf("read busybox: %w", err)
	}
	files := map[string]entry{} // keyed by clean relative path
	dirs := map[string]bool{}
	addDirs := func(p string) {
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range baseDirs {
		dirs[d] = true
	}
	files["bin/busybox"] = fileEntry("bin/busybox", 0o755, bbData)
	for _, a := range applets(busybox) {
		p := "bin/" + a
		files[p] = symlinkEntry(p, "busybox")
	}
	// Scripts often start with #!/usr/bin/env.
	files["usr/bin/env"] = symlinkEntry("usr/bin/env", "/bin/busybox")
	files["etc/passwd"] = fileEntry("etc/passwd", 0o644, []byte(passwd))
	files["etc/group"] = fileEntry("etc/group", 0o644, []byte(group))

	for dst, src := range extra {
		rel := strings.TrimPrefix(path.Clean("/"+filepath.ToSlash(dst)), "/")
		if rel == "" || !path.IsAbs(filepath.ToSlash(dst)) {
			return nil, fmt.Errorf("%w: extra file path %q must be absolute and name a file", ErrInvalid, dst)
		}
		if dirs[rel] {
			return nil, fmt.Errorf("%w: extra file %q is a directory of the image", ErrInvalid, dst)
		}
		st, err := os.Stat(src)
		if err != nil {
			return nil, fmt.Errorf("extra file %s: %w", dst, err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: extra file %s: %s is not a regular file", ErrInvalid, dst, src)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("extra file %s: %w", dst, err)
		}
		files[rel] = fileEntry(rel, int64(st.Mode().Perm()), data)
		addDirs(rel)
	}
	for p := range files {
		addDirs(p)
	}
	for p := range files {
		if dirs[p] {
			return nil, fmt.Errorf("%w: %q is both a file and a directory", ErrInvalid, "/"+p)
		}
	}

	entries := make([]entry, 0, len(files)+len(dirs))
	for d := range dirs {
		mode, ok := baseDirs[d]
		if !ok {
			mode = 0o755
		}
		entries = append(entries, dirEntry(d, mode))
	}
	for _, e := range files {
		entries = append(entries, e)
	}
	// Sorting by clean path puts every directory before its contents.
	sort.Slice(entries, func(i, j int) bool {
		return strings.TrimSuffix(entries[i].hdr.Name, "/") < strings.TrimSuffix(entries[j].hdr.Name, "/")
	})
	var buf bytes.Buffer
	if err := writeTar(&buf, entries); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
