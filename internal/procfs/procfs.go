package procfs

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Process is one process and its arguments.
type Process struct {
	PID  int
	Args []string
}

// List returns every process whose command line is readable.
func List() []Process {
	return Matching(nil)
}

// Matching returns the processes whose command line is readable and whose
// first argument satisfies match (every process when match is nil). The
// arguments of the others are never split: a caller looking for a few
// processes among many pays for little more than the reads.
func Matching(match func(arg0 string) bool) []Process {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var out []Process
	buf := make([]byte, 4096)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		var b []byte
		b, buf = readCmdline(name, buf)
		if len(b) == 0 {
			continue
		}
		b = bytes.TrimRight(b, "\x00")
		arg0 := b
		if i := bytes.IndexByte(b, 0); i >= 0 {
			arg0 = b[:i]
		}
		if match != nil && !match(string(arg0)) {
			continue
		}
		out = append(out, Process{PID: pid, Args: strings.Split(string(b), "\x00")})
	}
	return out
}

// readCmdline reads /proc/<pid>/cmdline into buf (grown when too small,
// and returned for the next read): an open, the reads to its end and a
// close, without os.ReadFile's stat and allocation. It returns nil when
// the process is gone.
func readCmdline(pid string, buf []byte) ([]byte, []byte) {
	fd, err := unix.Open("/proc/"+pid+"/cmdline", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, buf
	}
	defer unix.Close(fd)
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, buf
		}
		if m == 0 {
			return buf[:n], buf
		}
		n += m
	}
}
