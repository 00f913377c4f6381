package supervise

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// fileKeyValue resolves env[].valueFrom.fileKeyRef as kubelet does
// (EnvFiles): the file at path inside the pod's emptyDir volumeName, which
// an init container wrote, is read when the container starts, and key's
// value taken from it. The value, whether it is set (false: optional and
// the key missing or empty, the variable is left out), or the error the
// container waits in CreateContainerConfigError with. As kubelet's, a file
// that is missing or not in the format is an error even when optional, and
// an empty value counts as a missing key. emptyDir gives the host
// directory of an emptyDir volume. The path is resolved inside the volume:
// a symlink that leads out of it is an error.
func fileKeyValue(pod *v1.Pod, r *v1.FileKeySelector, emptyDir func(string) string) (string, bool, error) {
	isEmptyDir := false
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.Name == r.VolumeName && v.EmptyDir != nil {
			isEmptyDir = true
		}
	}
	if !isEmptyDir || emptyDir == nil {
		return "", false, fmt.Errorf("cannot find the volume %q referenced by FileKeyRef", r.VolumeName)
	}
	f, err := os.OpenInRoot(emptyDir(r.VolumeName), r.Path)
	if err != nil {
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err // the host path says nothing to the pod's author
		}
		return "", false, fmt.Errorf("couldn't parse env file %q of volume %q: %w", r.Path, r.VolumeName, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("couldn't parse env file %q of volume %q: not a regular file", r.Path, r.VolumeName)
	}
	v, err := envFileValue(f, r.Key)
	if err != nil {
		return "", false, fmt.Errorf("couldn't parse env file %q of volume %q: %w", r.Path, r.VolumeName, err)
	}
	if v == "" {
		if isOptional(r.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("environment variable key %q not found in file %q of volume %q", r.Key, r.Path, r.VolumeName)
	}
	return v, true, nil
}

// envFileValue reads key's value from an env file in kubelet's format
// (ParseEnv), a strict subset of the shell's: KEY='value' lines, the
// value always in single quotes and taken literally, over several lines
// if the quote closes on a later one; leading blanks, blank lines and
// '#' comment lines skipped, a comment allowed after the closing quote;
// no blank before '='; blanks after '=' make the value empty (as the
// shell's KEY= 'v'). The file is read up to key's first definition, and
// lines are bounded as bufio.Scanner's (64 KiB). A key not defined gives
// "". Errors name the line, never a value.
func envFileValue(r io.Reader, key string) (string, error) {
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimLeft(sc.Text(), " \t")
		if line == "" || line[0] == '#' {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		switch {
		case !ok:
			return "", fmt.Errorf("invalid environment variable format at line %d: missing '='", n)
		case strings.TrimRight(name, " \t") == "":
			return "", fmt.Errorf("invalid environment variable format at line %d: empty variable name", n)
		case strings.TrimRight(name, " \t") != name:
			return "", fmt.Errorf("invalid environment variable format at line %d: whitespace before '=' is not allowed", n)
		}
		if strings.TrimLeft(value, " \t") != value {
			if name == key {
				return "", nil
			}
			continue
		}
		if !strings.HasPrefix(value, "'") {
			return "", fmt.Errorf("invalid environment variable format at line %d: value must be enclosed in single quotes", n)
		}
		var b strings.Builder
		rest, start := value[1:], n
		for {
			before, after, closed := strings.Cut(rest, "'")
			if closed {
				b.WriteString(before)
				if a := strings.TrimLeft(after, " \t"); a != "" && a[0] != '#' {
					return "", fmt.Errorf("invalid environment variable format at line %d: unexpected content after closing quote", n)
				}
				break
			}
			b.WriteString(rest)
			b.WriteByte('\n')
			if !sc.Scan() {
				if err := sc.Err(); err != nil {
					return "", fmt.Errorf("read the environment variable file: %w", err)
				}
				return "", fmt.Errorf("invalid environment variable format starting at line %d: unclosed single quote", start)
			}
			n++
			rest = sc.Text()
		}
		if name == key {
			return b.String(), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read the environment variable file: %w", err)
	}
	return "", nil
}
