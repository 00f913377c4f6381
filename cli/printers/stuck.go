package printers

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/distribution/reference"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Stuck is why a pod makes no progress, as the first line of describe pod
// says it ("Stuck: " and Line).
type Stuck struct {
	// Cause is the line without the log lines: what holds the pod.
	Cause string
	// Logs, when set, names the container whose last log lines complete
	// the cause (a crash back-off, a failed run); Previous says they are
	// those of its last terminated run.
	Logs     string
	Previous bool
}

// The most a stuck line shows: of a message (a pull error, a probe's
// output), of each log line, and how many log lines.
const (
	StuckTailLines    = 3
	stuckMessageBytes = 300
	stuckLogLineBytes = 120
)

// stuckChecks are the causes PodStuck looks for, in order; the first that
// holds wins. The pod-level causes come first: no container starts before
// the sandbox (volumes, network) is ready, and nothing of a pod that waits
// for other pods (podvisor.io/wait-for) is created before they are Ready.
var stuckChecks = []func(pod *v1.Pod, events []v1.Event) (Stuck, bool){
	stuckWaitingFor,
	stuckSandbox,
	stuckContainers,
}

// PodStuck returns why pod is stuck, from its status, its probe results
// and its events (events of other pods are skipped); false when the pod is
// fine (Running and Ready, or Succeeded), is being removed, or holds for no
// cause it knows. It names objects, keys, images and plugins, never an
// environment value.
func PodStuck(pod *v1.Pod, events []v1.Event) (Stuck, bool) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodRunning && status.PodReady(pod) {
		return Stuck{}, false
	}
	var mine []v1.Event
	for _, e := range events {
		if e.InvolvedObject.UID == pod.UID && e.InvolvedObject.Name == pod.Name {
			mine = append(mine, e)
		}
	}
	for _, check := range stuckChecks {
		if s, ok := check(pod, mine); ok {
			return s, true
		}
	}
	return Stuck{}, false
}

// Line is the stuck line after "Stuck: ": the cause, then tail (the last
// log lines of s.Logs, each quoted), escaped and on one line.
func (s Stuck) Line(tail []string) string {
	line := s.Cause
	if s.Logs != "" && len(tail) > 0 {
		if len(tail) > StuckTailLines {
			tail = tail[len(tail)-StuckTailLines:]
		}
		q := make([]string, len(tail))
		for i, l := range tail {
			q[i] = strconv.Quote(cutBytes(l, stuckLogLineBytes))
		}
		line += "; last log lines: " + strings.Join(q, " ")
	}
	return Escape(line)
}

// The messages the daemon writes, as libcni and kubelet word them.
var (
	// libcni's AddNetworkList: plugin type="bridge" name="x" failed (add): MSG
	cniAddFailed = regexp.MustCompile(`plugin type="([^"]*)"[^:]* failed \(add\): (.*)$`)
	// kubelet's FailedMount: MountVolume.SetUp failed for volume "V" : MSG
	mountFailed = regexp.MustCompile(`^MountVolume\.SetUp failed for volume "([^"]*)" : (.*)$`)
	// the runtime's pull error: pull image REF: ERR
	pullWrapper = regexp.MustCompile(`^pull image \S+: `)
	// kubelet's volume plugins: a missing key of a ConfigMap or Secret
	missingKey = regexp.MustCompile(`^(configmap|) ?references non-existent (?:config|secret) key: (.*)$`)
)

// stuckSandbox: the pod's sandbox is not ready because its volumes cannot
// be set up or its network cannot be attached; the latest FailedMount or
// FailedCreatePodSandBox event since the sandbox stopped being ready says
// which.
func stuckSandbox(pod *v1.Pod, events []v1.Event) (Stuck, bool) {
	var since *v1.PodCondition
	for i, c := range pod.Status.Conditions {
		if c.Type == v1.PodReadyToStartContainers {
			since = &pod.Status.Conditions[i]
		}
	}
	if since == nil || since.Status == v1.ConditionTrue {
		return Stuck{}, false
	}
	var last *v1.Event
	for i, e := range events {
		if e.Type != v1.EventTypeWarning || e.Reason != "FailedMount" && e.Reason != "FailedCreatePodSandBox" {
			continue
		}
		if e.LastTimestamp.Before(&since.LastTransitionTime) {
			continue
		}
		if last == nil || !e.LastTimestamp.Before(&last.LastTimestamp) {
			last = &events[i]
		}
	}
	if last == nil {
		return Stuck{}, false
	}
	msg := strings.TrimSpace(last.Message)
	if last.Reason == "FailedMount" {
		if m := mountFailed.FindStringSubmatch(msg); m != nil {
			return Stuck{Cause: fmt.Sprintf("volume %q: %s", m[1], volumeMessage(pod, m[1], m[2]))}, true
		}
		return Stuck{Cause: "volumes: " + oneLine(msg, stuckMessageBytes)}, true
	}
	if m := cniAddFailed.FindStringSubmatch(msg); m != nil {
		return Stuck{Cause: fmt.Sprintf("CNI plugin %q failed ADD: %s", m[1], oneLine(m[2], stuckMessageBytes))}, true
	}
	return Stuck{Cause: "pod sandbox: " + oneLine(strings.TrimPrefix(msg, "Failed to create pod sandbox: "), stuckMessageBytes)}, true
}

// volumeMessage says what is missing for volume name: a missing key with
// the object the volume names (kubelet's message does not), else msg.
func volumeMessage(pod *v1.Pod, name, msg string) string {
	m := missingKey.FindStringSubmatch(msg)
	if m == nil {
		return oneLine(msg, stuckMessageBytes)
	}
	var vol *v1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			vol = &pod.Spec.Volumes[i]
		}
	}
	key := m[2]
	switch {
	case vol != nil && vol.ConfigMap != nil && m[1] == "configmap":
		return fmt.Sprintf("ConfigMap %q has no key %q", vol.ConfigMap.Name, key)
	case vol != nil && vol.Secret != nil && m[1] == "":
		return fmt.Sprintf("Secret %q has no key %q", vol.Secret.SecretName, key)
	}
	return oneLine(msg, stuckMessageBytes) // a projected volume: several objects
}

// stuckContainers: the first container, init containers first, that
// waits on its image, its configuration, a crash back-off or a probe, or
// that failed.
func stuckContainers(pod *v1.Pod, events []v1.Event) (Stuck, bool) {
	specs := map[string]*v1.Container{}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			specs[cs[i].Name] = &cs[i]
		}
	}
	results := status.PodProbeResults(pod)
	for _, statuses := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range statuses {
			if s, ok := stuckContainer(pod, specs[statuses[i].Name], &statuses[i], results[statuses[i].Name], events); ok {
				return s, true
			}
		}
	}
	return Stuck{}, false
}

func stuckContainer(pod *v1.Pod, spec *v1.Container, cs *v1.ContainerStatus, probes map[string]status.ProbeResult, events []v1.Event) (Stuck, bool) {
	image := cs.Image
	if spec != nil {
		image = spec.Image
	}
	st := cs.State
	switch {
	case st.Waiting != nil:
		msg := oneLine(st.Waiting.Message, stuckMessageBytes)
		switch st.Waiting.Reason {
		case "ErrImagePull", "ImagePullBackOff":
			msg = pullWrapper.ReplaceAllString(msg, "") // the line names the image
			return Stuck{Cause: fmt.Sprintf("image %q cannot be pulled from %s: %s", image, registry(image), msg)}, true
		case "ErrImageNeverPull":
			return Stuck{Cause: fmt.Sprintf("image %q is not present and container %q has imagePullPolicy Never", image, cs.Name)}, true
		case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
			return Stuck{Cause: fmt.Sprintf("container %q cannot be created: %s", cs.Name, msg)}, true
		case "CrashLoopBackOff":
			cause := fmt.Sprintf("back-off restarting container %q", cs.Name)
			if t := cs.LastTerminationState.Terminated; t != nil {
				cause += " (last " + exitString(t) + ")"
			}
			return Stuck{Cause: cause, Logs: cs.Name, Previous: true}, true
		}
	case st.Running != nil:
		failing := func(probe string) (Stuck, bool) {
			msg, ok := probeFailing(probe, probes[probe], cs, events)
			if !ok {
				return Stuck{}, false
			}
			cause := fmt.Sprintf("%s probe of %q failing", probe, cs.Name)
			if msg != "" {
				cause += ": " + oneLine(msg, stuckMessageBytes)
			}
			return Stuck{Cause: cause}, true
		}
		if cs.Started == nil || !*cs.Started {
			return failing("startup")
		}
		if s, ok := failing("liveness"); ok {
			return s, true
		}
		if !cs.Ready {
			return failing("readiness")
		}
	case st.Terminated != nil:
		if pod.Status.Phase == v1.PodFailed && st.Terminated.ExitCode != 0 {
			return Stuck{Cause: fmt.Sprintf("container %q failed (%s)", cs.Name, exitString(st.Terminated)), Logs: cs.Name}, true
		}
	}
	return Stuck{}, false
}

// probeFailing returns the last output of a probe of the running
// container cs that fails: from its last result when that is a failure or
// says why it is not a success yet (a startup probe below its failure
// threshold), else from the latest Unhealthy event about the container
// since its run started ("Startup probe failed: OUTPUT").
func probeFailing(probe string, r status.ProbeResult, cs *v1.ContainerStatus, events []v1.Event) (string, bool) {
	if r.Result == "Failure" || r.Result != "Success" && r.Message != "" {
		return r.Message, true
	}
	if r.Result == "Success" {
		return "", false
	}
	prefix := strings.ToUpper(probe[:1]) + probe[1:] + " probe failed: "
	started := cs.State.Running.StartedAt.Rfc3339Copy() // events keep seconds
	var msg string
	var at metav1.Time
	found := false
	for _, e := range events {
		if e.Reason != "Unhealthy" || !strings.HasPrefix(e.Message, prefix) || e.LastTimestamp.Before(&started) ||
			e.InvolvedObject.FieldPath != "spec.containers{"+cs.Name+"}" && e.InvolvedObject.FieldPath != "spec.initContainers{"+cs.Name+"}" {
			continue
		}
		if !found || !e.LastTimestamp.Before(&at) {
			msg, at, found = strings.TrimPrefix(e.Message, prefix), e.LastTimestamp, true
		}
	}
	return msg, found
}

func exitString(t *v1.ContainerStateTerminated) string {
	s := fmt.Sprintf("exit %d", t.ExitCode)
	if t.Reason != "" {
		s += ", " + t.Reason
	}
	return s
}

// registry is the host an image is pulled from, as containerd resolves
// its name (docker.io for a short name).
func registry(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "its registry"
	}
	return reference.Domain(named)
}

// oneLine is s on one line (every run of white space one space), cut to
// max bytes at a rune boundary with "..." after it.
func oneLine(s string, max int) string {
	return cutBytes(strings.Join(strings.Fields(s), " "), max)
}

func cutBytes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	end := max
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "..."
}

// stuckWaitingFor: the pod waits for other pods to be Ready before any of
// it is created (podvisor.io/wait-for); the condition's message names them.
func stuckWaitingFor(pod *v1.Pod, _ []v1.Event) (Stuck, bool) {
	c := status.PodWaitingFor(pod)
	if c == nil {
		return Stuck{}, false
	}
	return Stuck{Cause: "waiting for pods to be Ready (podvisor.io/wait-for): " + c.Message}, true
}
