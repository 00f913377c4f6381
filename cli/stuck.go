package cli

import (
	"bufio"
	"context"
	"io"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/cli/printers"
	v1 "k8s.io/api/core/v1"
)

// stuckLogTimeout bounds the fetch of the log lines a stuck line shows;
// without them the line still names the cause.
const stuckLogTimeout = 5 * time.Second

// stuckLine returns describe's first line for pod ("Stuck: ..." and a
// newline), "" when it is not stuck. A back-off's last log lines come
// from the logs API.
func stuckLine(ctx context.Context, client *api.Client, pod *v1.Pod, events []v1.Event) string {
	s, ok := printers.PodStuck(pod, events)
	if !ok {
		return ""
	}
	var tail []string
	if s.Logs != "" {
		tail = logTail(ctx, client, pod, s.Logs, s.Previous)
	}
	return "Stuck: " + s.Line(tail) + "\n"
}

// logTail returns the last printers.StuckTailLines lines of a container's
// log, none when they cannot be read.
func logTail(ctx context.Context, client *api.Client, pod *v1.Pod, container string, previous bool) []string {
	ctx, cancel := context.WithTimeout(ctx, stuckLogTimeout)
	defer cancel()
	n, limit := int64(printers.StuckTailLines), int64(64<<10)
	rc, err := client.Logs(ctx, pod.Namespace+"/"+pod.Name, &v1.PodLogOptions{Container: container, Previous: previous, TailLines: &n, LimitBytes: &limit})
	if err != nil {
		return nil
	}
	defer rc.Close()
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(rc, limit))
	sc.Buffer(make([]byte, 0, 4096), int(limit))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}
