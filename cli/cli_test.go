package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// runCLI runs podvisor with args as the binary would and returns its
// stdout, stderr and exit code.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCLIIn(t, "", args...)
}

// runCLIIn is runCLI with stdin.
func runCLIIn(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Execute(t.Context(), args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), code
}

// runCLIContext runs podvisor until ctx ends, writing to out and errOut.
func runCLIContext(ctx context.Context, out, errOut interface{ Write([]byte) (int, error) }, args ...string) int {
	return Execute(ctx, args, strings.NewReader(""), out, errOut)
}
