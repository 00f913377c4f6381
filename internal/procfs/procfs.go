package procfs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Process is one process and its arguments.
type Process struct {
	PID  int
	Args []string
}

// List returns every process whose command line is readable.
func List() []Process {
	ents, _ := os.ReadDir("/proc")
	var out []Process
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		out = append(out, Process{PID: pid, Args: strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")})
	}
	return out
}
