package crilog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// DriverArg encodes a log path and its rotation policy into the single
// argument containerd passes to a binary log driver, as
// "<max size>:<max files>:<path>". containerd turns each query parameter of
// the log URI into two arguments in map order, so everything the driver
// needs travels in one value.
func DriverArg(path string, p Policy) string {
	p = p.withDefaults()
	return strconv.FormatInt(p.MaxSize, 10) + ":" + strconv.Itoa(p.MaxFiles) + ":" + path
}

// ParseDriverArg is the inverse of DriverArg. It also takes the argument
// of podvisor before max files, "<max size>:<path>", which tasks started
// then still hand their drivers: that log keeps DefaultMaxFiles files.
func ParseDriverArg(arg string) (path string, p Policy, err error) {
	n, rest, ok := strings.Cut(arg, ":")
	if !ok {
		return "", Policy{}, fmt.Errorf("log driver: bad argument %q", arg)
	}
	p.MaxSize, err = strconv.ParseInt(n, 10, 64)
	if err != nil {
		return "", Policy{}, fmt.Errorf("log driver: bad size in %q: %w", arg, err)
	}
	path = rest
	if !strings.HasPrefix(rest, "/") {
		files, pp, ok := strings.Cut(rest, ":")
		if !ok {
			return "", Policy{}, fmt.Errorf("log driver: bad argument %q", arg)
		}
		if p.MaxFiles, err = strconv.Atoi(files); err != nil || p.MaxFiles < MinMaxFiles {
			return "", Policy{}, fmt.Errorf("log driver: bad max files in %q: want a number of at least %d", arg, MinMaxFiles)
		}
		path = pp
	}
	if !filepath.IsAbs(path) {
		return "", Policy{}, fmt.Errorf("log driver: bad argument %q: the log path is not absolute", arg)
	}
	return path, p.withDefaults(), nil
}

// RunDriver is the body of `podvisor log-driver ARG`, started by a
// containerd shim with the task's stdout on fd 3, stderr on fd 4 and a
// readiness pipe on fd 5. It returns when both streams reach EOF (the
// container and every process holding its output are gone): output the
// file cannot take is dropped and counted, never left in the pipes.
func RunDriver(arg string) error {
	path, p, err := ParseDriverArg(arg)
	if err != nil {
		return err
	}
	stdout := os.NewFile(3, "stdout")
	stderr := os.NewFile(4, "stderr")
	// Closing the readiness pipe lets the shim go on creating the task.
	// It is done first: the output pipes buffer whatever the container
	// writes until the file is open, and the shim must not wait for our
	// file system (nor hang if opening the file fails).
	if ready := os.NewFile(5, "ready"); ready != nil {
		ready.Close()
	}
	w := OpenPolicy(path, p)
	defer w.Close()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []struct {
		name string
		f    *os.File
	}{{"stdout", stdout}, {"stderr", stderr}} {
		if s.f == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.Copy(s.name, s.f)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
