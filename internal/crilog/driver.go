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

// DriverArg encodes a log path and size cap into the single argument
// containerd passes to a binary log driver. containerd turns each query
// parameter of the log URI into two arguments in map order, so everything
// the driver needs travels in one value.
func DriverArg(path string, maxSize int64) string {
	return strconv.FormatInt(maxSize, 10) + ":" + path
}

// ParseDriverArg is the inverse of DriverArg.
func ParseDriverArg(arg string) (path string, maxSize int64, err error) {
	n, p, ok := strings.Cut(arg, ":")
	if !ok || !filepath.IsAbs(p) {
		return "", 0, fmt.Errorf("log driver: bad argument %q", arg)
	}
	maxSize, err = strconv.ParseInt(n, 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("log driver: bad size in %q: %w", arg, err)
	}
	return p, maxSize, nil
}

// RunDriver is the body of `podvisor log-driver ARG`, started by a
// containerd shim with the task's stdout on fd 3, stderr on fd 4 and a
// readiness pipe on fd 5. It returns when both streams reach EOF (the
// container and every process holding its output are gone): output the
// file cannot take is dropped and counted, never left in the pipes.
func RunDriver(arg string) error {
	path, maxSize, err := ParseDriverArg(arg)
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
	w := Open(path, maxSize)
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
