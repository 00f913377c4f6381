package supervise

import (
	"bufio"
	"bytes"
	"io"
	"os"

	"github.com/podvisor/podvisor/internal/crilog"
)

// readAtMost reads up to n bytes of a file.
func readAtMost(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// tailLog returns the content of the last lines of a CRI log file, at most
// maxLines lines and maxBytes bytes, as kubelet's FallbackToLogsOnError.
func tailLog(path string, maxLines int, maxBytes int) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 64*1024)
	var cur []byte
	for sc.Scan() {
		r, err := crilog.Parse(sc.Bytes())
		if err != nil {
			continue
		}
		cur = append(cur, r.Content...)
		if r.Partial {
			continue
		}
		lines = append(lines, append(cur, '\n'))
		cur = nil
		if len(lines) > maxLines {
			lines = lines[1:]
		}
	}
	out := bytes.Join(lines, nil)
	if len(out) > maxBytes {
		out = out[len(out)-maxBytes:]
	}
	return out
}
