package supervise

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

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

type pullSecretsKey struct{}

// WithPullSecrets returns ctx carrying the pod's imagePullSecrets (the
// local Secrets it names that exist) for the EnsureImage called with it.
// The runtime tries their credentials before the node's, as kubelet.
func WithPullSecrets(ctx context.Context, secrets []*v1.Secret) context.Context {
	return context.WithValue(ctx, pullSecretsKey{}, secrets)
}

// PullSecretsFrom returns the imagePullSecrets of ctx, nil when none.
func PullSecretsFrom(ctx context.Context) []*v1.Secret {
	s, _ := ctx.Value(pullSecretsKey{}).([]*v1.Secret)
	return s
}

// pullSecrets returns the Secrets pod's imagePullSecrets name in its
// namespace, and kubelet's FailedToRetrieveImagePullSecret message when
// some are missing (kubelet's getPullSecretsForPod) or not of a docker
// config type (which kubelet's keyring skips without a word; podvisor
// says so). Entries with an empty name are skipped, as kubelet's. The
// message names Secrets, never their values.
func pullSecrets(pod *v1.Pod, objs Objects) ([]*v1.Secret, string) {
	var out []*v1.Secret
	var failed []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue
		}
		s := objs.Secrets[pod.Namespace+"/"+ref.Name]
		switch {
		case s == nil:
			failed = append(failed, ref.Name)
		case s.Type != v1.SecretTypeDockerConfigJson && s.Type != v1.SecretTypeDockercfg:
			failed = append(failed, fmt.Sprintf("%s (type %s, not %s)", ref.Name, s.Type, v1.SecretTypeDockerConfigJson))
		default:
			out = append(out, s)
		}
	}
	if len(failed) == 0 {
		return out, ""
	}
	return out, fmt.Sprintf("Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
}
