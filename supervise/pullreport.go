package supervise

import "context"

// PullReporter receives what a runtime has to say of a pull while it runs
// (reason "Pulling": its start, then the bytes received while it is slow),
// from any goroutine; the worker makes each an event of the container.
type PullReporter func(reason, message string)

type pullReporterKey struct{}

// WithPullReporter returns ctx carrying f for the EnsureImage called with
// it.
func WithPullReporter(ctx context.Context, f PullReporter) context.Context {
	return context.WithValue(ctx, pullReporterKey{}, f)
}

// PullReporterFrom returns the PullReporter of ctx, or one that drops
// everything.
func PullReporterFrom(ctx context.Context) PullReporter {
	if f, ok := ctx.Value(pullReporterKey{}).(PullReporter); ok && f != nil {
		return f
	}
	return func(string, string) {}
}
