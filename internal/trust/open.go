package trust

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrUntrusted is what UntrustedError unwraps to.
var ErrUntrusted = errors.New("untrusted file")

// UntrustedError is a refusal of ReadTrusted: the file, and why.
type UntrustedError struct {
	Path     string
	Problems []Problem
}

func (e *UntrustedError) Error() string {
	msgs := make([]string, 0, len(e.Problems))
	for _, p := range e.Problems {
		msgs = append(msgs, p.String())
	}
	return fmt.Sprintf("%s is not trusted: %s (fix with chown root and chmod go-w, on the file and each directory named)", e.Path, strings.Join(msgs, "; "))
}

// Unwrap returns ErrUntrusted.
func (e *UntrustedError) Unwrap() error { return ErrUntrusted }

// testHookBeforeRead, set by tests only, runs between the checks and the
// read: a file swapped then must not be what is read.
var testHookBeforeRead func()

// maxLinkHops bounds the links Open follows, as the kernel's ELOOP.
const maxLinkHops = 40

// ReadFile opens path as Open does and reads at most limit bytes from the
// descriptor that was checked; a longer file is an error. The problems
// are returned with the content: the caller decides whether to warn or
// refuse.
func ReadFile(path string, trustedUID int, limit int64) ([]byte, []Problem, error) {
	f, problems, err := Open(path, trustedUID)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if testHookBeforeRead != nil {
		testHookBeforeRead()
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, problems, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, problems, fmt.Errorf("read %s: larger than %d bytes", path, limit)
	}
	return b, problems, nil
}

// ReadTrusted is ReadFile that refuses a file with problems: the error is
// an *UntrustedError naming each.
func ReadTrusted(path string, trustedUID int, limit int64) ([]byte, error) {
	b, problems, err := ReadFile(path, trustedUID, limit)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, &UntrustedError{Path: path, Problems: problems}
	}
	return b, nil
}

// CheckFile returns the problems of the file at path as Open finds them,
// without reading it; a file that does not exist has none.
func CheckFile(path string, trustedUID int) ([]Problem, error) {
	f, problems, err := Open(path, trustedUID)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f.Close()
	return problems, nil
}
