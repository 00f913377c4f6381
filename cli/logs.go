package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/internal/backoff"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// defaultContainerAnnotation names the container kubectl picks when none
// is given (kubectl's annotation of that name).
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// resumeGrace is how long a followed stream that broke retries every
// error: a podvisor that has just started answers before it has adopted
// its pods. After it, only "cannot reach podvisor" is retried, and a pod
// that is not found has gone.
const resumeGrace = 30 * time.Second

// podLookupTimeout bounds the look-up of the pod before its logs are read.
const podLookupTimeout = 30 * time.Second

// logsOptions are podvisor logs' flags.
type logsOptions struct {
	container  string
	follow     bool
	previous   bool
	tail       int64
	since      time.Duration
	sinceTime  string
	timestamps bool
	all        bool
	prefix     bool
	limitBytes int64
	sel        podSelection
}

func newLogsCommand(g *globalOptions) *cobra.Command {
	o := &logsOptions{}
	cmd := &cobra.Command{
		Use:   "logs POD [CONTAINER]",
		Short: "print a container's logs, as kubectl logs does",
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := o.parse(cmd.Flags(), args, time.Now())
			if err != nil {
				return err
			}
			return a.run(cmd, g)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.container, "container", "c", "", "the container, also given as the second argument (default: the kubectl.kubernetes.io/default-container annotation's, else the first)")
	fs.Int64Var(&o.limitBytes, "limit-bytes", 0, "stop after this many bytes of log (0: no limit)")
	o.sel.addNamespaceFlag(fs)
	fs.BoolVarP(&o.follow, "follow", "f", false, "go on printing new output, across rotations, restarts of the container and of podvisor, until the pod is gone")
	fs.BoolVarP(&o.previous, "previous", "p", false, "the container's previous run (before its last restart)")
	fs.Int64Var(&o.tail, "tail", -1, "only the last N lines (-1: all)")
	fs.DurationVar(&o.since, "since", 0, "only lines newer than a duration such as 5s, 2m or 3h")
	fs.StringVar(&o.sinceTime, "since-time", "", "only lines written at or after an RFC3339 time")
	fs.BoolVar(&o.timestamps, "timestamps", false, "begin each line with the time it was written (RFC3339Nano)")
	fs.BoolVar(&o.all, "all-containers", false, "every container of the pod, init containers first")
	fs.BoolVar(&o.prefix, "prefix", false, "begin each line with [pod/NAME/CONTAINER]")
	return cmd
}

// logsArgs is a logs command line, checked as kubectl checks it.
type logsArgs struct {
	pod        string
	container  string
	all        bool
	prefix     bool
	timestamps bool
	limitBytes int64 // --limit-bytes; 0: none
	opts       v1.PodLogOptions
}

func (o *logsOptions) parse(fs *pflag.FlagSet, args []string, now time.Time) (logsArgs, error) {
	if len(args) < 1 || len(args) > 2 {
		return logsArgs{}, usageErrorf("usage: podvisor logs POD [CONTAINER] [-c CONTAINER] [-n NAMESPACE] [-f] [-p] [--tail N] [--since D | --since-time T] [--timestamps] [--all-containers] [--prefix] [--limit-bytes N]")
	}
	pod, err := podName(args[0])
	if err != nil {
		return logsArgs{}, err
	}
	container := o.container
	if len(args) == 2 {
		if container != "" && container != args[1] {
			return logsArgs{}, usageErrorf("only one of -c or an inline [CONTAINER] arg is allowed")
		}
		container = args[1]
	}
	a := logsArgs{
		pod:        o.sel.qualified(pod),
		container:  container,
		all:        o.all,
		prefix:     o.prefix,
		timestamps: o.timestamps,
		opts: v1.PodLogOptions{
			Follow:   o.follow,
			Previous: o.previous,
			// Always asked for: a stream that breaks resumes from the
			// last line's time.
			Timestamps: true,
		},
	}
	if a.all && a.container != "" {
		return a, usageErrorf("--all-containers=true should not be specified with container name %s", a.container)
	}
	if n := o.limitBytes; n < 0 {
		return a, usageErrorf("--limit-bytes must be greater than 0")
	}
	// The limit is the client's to keep: the server would count the
	// timestamps always asked for (and a resumed stream starts its count
	// anew), where --limit-bytes counts what is printed.
	a.limitBytes = o.limitBytes
	if n := o.tail; n < -1 {
		return a, usageErrorf("--tail must be greater than or equal to -1")
	} else if n >= 0 {
		a.opts.TailLines = &n
	}
	if fs.Changed("since") && fs.Changed("since-time") {
		return a, usageErrorf("at most one of `sinceTime` or `sinceSeconds` may be specified")
	}
	if fs.Changed("since") {
		if o.since <= 0 {
			return a, usageErrorf("--since must be greater than 0")
		}
		s := int64(math.Ceil(o.since.Seconds())) // kubectl rounds up to a second
		a.opts.SinceSeconds = &s
	}
	if v := o.sinceTime; v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return a, usageErrorf("--since-time: %q is not an RFC3339 time such as %s", v, now.UTC().Format(time.RFC3339))
		}
		mt := metav1.NewTime(t)
		a.opts.SinceTime = &mt
	}
	return a, nil
}

// logContainers picks the containers to read, as kubectl does: all of
// them, the one named, or the default (logsDefaultContainer).
func logContainers(pod *v1.Pod, a logsArgs, warn io.Writer) ([]string, error) {
	switch {
	case a.all:
		var names []string
		for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
			names = append(names, c.Name)
		}
		return names, nil
	case a.container != "":
		return []string{a.container}, nil
	}
	c, err := logsDefaultContainer(pod, warn)
	if err != nil {
		return nil, err
	}
	return []string{c}, nil
}

func (a logsArgs) run(cmd *cobra.Command, g *globalOptions) error {
	ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	client, err := g.client()
	if err != nil {
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, podLookupTimeout)
	pod, err := client.Pod(lctx, a.pod)
	cancel()
	if err != nil {
		return err
	}
	containers, err := logContainers(pod, a, stderr)
	if err != nil {
		return err
	}
	out := &lineOut{w: bufio.NewWriter(stdout)}
	defer out.flush()
	s := &logStreamer{client: client, stderr: stderr, out: out, timestamps: a.timestamps, limitBytes: a.limitBytes}
	// By namespace/name: the pod's full name, never ambiguous.
	name := pod.Namespace + "/" + pod.Name
	prefixOf := func(container string) string {
		if a.prefix {
			return fmt.Sprintf("[pod/%s/%s] ", pod.Name, container)
		}
		return ""
	}
	if !a.opts.Follow || len(containers) == 1 {
		for _, ctr := range containers {
			if err := s.stream(ctx, name, ctr, a.opts, prefixOf(ctr)); err != nil {
				return err
			}
		}
		return nil
	}
	// Following several containers: all at once, as kubectl does.
	errs := make([]error, len(containers))
	var wg sync.WaitGroup
	for i, ctr := range containers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.stream(ctx, name, ctr, a.opts, prefixOf(ctr))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// lineOut writes whole lines from several streams.
type lineOut struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (o *lineOut) line(parts ...[]byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range parts {
		o.w.Write(p)
	}
}

func (o *lineOut) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.Flush()
}

// logStreamer prints log streams, resuming a followed one that breaks.
type logStreamer struct {
	client     *api.Client
	stderr     io.Writer
	out        *lineOut
	timestamps bool
	limitBytes int64 // of each container's log printed, prefixes aside; 0: none
	sayOnce    sync.Once
}

// stream prints one container's log. When a followed stream breaks (the
// daemon stopped or restarted), it tries again with a bounded back-off
// and resumes at the last line's time, skipping the lines of that time it
// printed already, so no line is repeated or lost.
func (s *logStreamer) stream(ctx context.Context, pod, container string, o v1.PodLogOptions, prefix string) error {
	o.Container = container
	retry := &backoff.Backoff{Initial: 250 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.2}
	var last []byte     // the last line's timestamp
	atLast := 0         // lines printed with that timestamp
	var broke time.Time // when a followed stream broke; zero: it did not
	catchUp := false    // read the rest of the run before the current one first
	left := int64(-1)   // bytes --limit-bytes still lets through; -1: no limit
	if s.limitBytes > 0 {
		left = s.limitBytes
	}
	for {
		if catchUp {
			if err := s.catchUp(ctx, pod, o, prefix, time.Since(broke) >= resumeGrace, &last, &atLast, &left); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if again, err := retryAfterBreak(err, broke); !again {
					return err
				}
				if !s.wait(ctx, retry.Next()) {
					return nil
				}
				continue
			}
			catchUp = false
			resumeAt(&o, last)
		}
		body, err := s.client.Logs(ctx, pod, &o)
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
		case broke.IsZero():
			return err
		default:
			if again, err := retryAfterBreak(err, broke); !again {
				return err
			}
			if !s.wait(ctx, retry.Next()) {
				return nil
			}
			continue
		}
		broke = time.Time{}
		retry.Reset()
		err = s.copy(body, prefix, &last, &atLast, &left)
		body.Close()
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if !o.Follow {
			return fmt.Errorf("read log: %w", err)
		}
		broke = time.Now()
		s.sayOnce.Do(func() {
			fmt.Fprintf(s.stderr, "podvisor: the log stream broke (%v); following again when podvisor is back\n", err)
		})
		resumeAt(&o, last)
		catchUp = !o.Previous && len(last) > 0
		if !s.wait(ctx, retry.Next()) {
			return nil
		}
	}
}

// retryAfterBreak decides about a failed request after the stream broke:
// try again while podvisor is not back, or back but still adopting its
// pods (it lists them only once it has looked at them), within
// resumeGrace; after that a pod not found has gone (the end, no error),
// and other errors are errors.
func retryAfterBreak(err error, broke time.Time) (bool, error) {
	switch {
	case errors.Is(err, api.ErrUnreachable), time.Since(broke) < resumeGrace:
		return true, nil
	case errors.Is(err, api.ErrNotFound):
		return false, nil
	}
	return false, err
}

// resumeAt makes o ask for the lines from last on (a timestamp), in place
// of its tail or since.
func resumeAt(o *v1.PodLogOptions, last []byte) {
	if t, err := time.Parse(time.RFC3339Nano, string(last)); err == nil {
		mt := metav1.NewTime(t)
		o.SinceTime, o.SinceSeconds, o.TailLines = &mt, nil, nil
	}
}

// catchUp prints what the previous run wrote after the last line printed:
// if the container restarted while the stream was broken, the end of the
// run that was followed is now the previous run (and when it did not,
// that run's lines are all older, and nothing is printed). A container
// without a previous run is no error.
// Until settled, other refusals (a podvisor still adopting its pods) are
// errors, to be tried again.
func (s *logStreamer) catchUp(ctx context.Context, pod string, o v1.PodLogOptions, prefix string, settled bool, last *[]byte, atLast *int, left *int64) error {
	resumeAt(&o, *last)
	o.Previous, o.Follow = true, false
	body, err := s.client.Logs(ctx, pod, &o)
	var apiErr *api.APIError
	if errors.As(err, &apiErr) && apiErr.Reason == metav1.StatusReasonBadRequest &&
		(strings.HasPrefix(apiErr.Message, "previous terminated container") || settled) {
		return nil
	}
	if err != nil {
		return err
	}
	defer body.Close()
	return s.copy(body, prefix, last, atLast, left)
}

func (s *logStreamer) wait(ctx context.Context, d time.Duration) bool {
	return backoff.Wait(ctx, d) == nil
}

// copy prints the lines of one response; *last and *atLast carry which
// lines were printed already across responses. It returns nil at the
// stream's end and the read error when it broke.
func (s *logStreamer) copy(body io.Reader, prefix string, last *[]byte, atLast *int, left *int64) error {
	skip := *atLast // a resumed stream repeats the lines of the last time
	br := bufio.NewReaderSize(body, 64<<10)
	for {
		if *left == 0 {
			s.out.flush()
			return nil // --limit-bytes printed: the end, as kubectl's
		}
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			ts, content := line, line[len(line):]
			if i := slices.Index(line, ' '); i >= 0 {
				ts, content = line[:i], line[i+1:]
			}
			switch {
			case skip > 0 && string(ts) == string(*last):
				skip--
				continue
			case string(ts) == string(*last):
				*atLast++
			default:
				skip = 0
				*last, *atLast = slices.Clone(ts), 1
			}
			out := content
			if s.timestamps {
				out = line
			}
			if *left >= 0 {
				out = out[:min(int64(len(out)), *left)]
				*left -= int64(len(out))
			}
			s.out.line([]byte(prefix), out)
		}
		if br.Buffered() == 0 {
			s.out.flush()
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) == 0 {
				return nil
			}
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
}
