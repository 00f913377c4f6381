package printers

import (
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// describeTime is kubectl describe's time format (RFC 1123 with a zone).
const describeTime = time.RFC1123Z

// PrintDescribe prints pod as `kubectl describe pod` does, with the events
// about it (any order; they are sorted by last occurrence) and, beside
// kubectl's fields, the manifest it comes from and the manifest's current
// error, if any.
func PrintDescribe(w io.Writer, pod *v1.Pod, events []v1.Event, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := func(indent int, format string, args ...any) {
		io.WriteString(tw, Escape(strings.Repeat("  ", indent)+fmt.Sprintf(format, args...))+"\n")
	}
	p(0, "Name:\t%s", pod.Name)
	p(0, "Namespace:\t%s", pod.Namespace)
	if rc := pod.Spec.RuntimeClassName; rc != nil && *rc != "" {
		p(0, "Runtime Class Name:\t%s", *rc) // where kubectl shows it
	}
	p(0, "Node:\t%s", nodeString(pod))
	if pod.Status.StartTime != nil {
		p(0, "Start Time:\t%s", pod.Status.StartTime.Format(describeTime))
	}
	printMap(p, "Labels", pod.Labels)
	probeResults := status.PodProbeResults(pod)
	annotations := maps.Clone(pod.Annotations)
	delete(annotations, status.ProbeResultsAnnotation) // shown beside each probe
	printMap(p, "Annotations", annotations)
	if pod.DeletionTimestamp != nil {
		p(0, "Status:\tTerminating (lasts %s)", sinceString(*pod.DeletionTimestamp, now))
		if pod.DeletionGracePeriodSeconds != nil {
			p(0, "Termination Grace Period:\t%ds", *pod.DeletionGracePeriodSeconds)
		}
		if st := status.PodStopStep(pod); st != nil {
			// What the stop waits on now: a hook, a container, a CNI
			// plugin that hangs.
			p(0, "Stopping:\twaiting on %s for %s", st.Step, sinceString(metav1.NewTime(st.Since), now))
		}
	} else {
		p(0, "Status:\t%s", pod.Status.Phase)
	}
	if pod.Status.Reason != "" {
		p(0, "Reason:\t%s", pod.Status.Reason)
	}
	if pod.Status.Message != "" {
		p(0, "Message:\t%s", message(0, 1, pod.Status.Message))
	}
	p(0, "IP:\t%s", pod.Status.PodIP)
	if len(pod.Status.PodIPs) > 0 {
		p(0, "IPs:\t")
		for _, ip := range pod.Status.PodIPs {
			p(1, "IP:\t%s", ip.IP)
		}
	} else {
		p(0, "IPs:\t<none>")
	}
	p(0, "Manifest:\t%s", orNone(pod.Annotations[status.ManifestPathAnnotation]))
	if e := pod.Annotations[status.ManifestErrorAnnotation]; e != "" {
		p(0, "Manifest Error:\t%s (running the last good version)", e)
	}
	if c := status.PodWaitingFor(pod); c != nil {
		// podvisor.io/wait-for: nothing starts until the pods are Ready.
		p(0, "Waiting For:\t%s; since %s (%s)", c.Message, c.LastTransitionTime.Format(describeTime), sinceString(c.LastTransitionTime, now))
	}
	if r := pod.Annotations[status.RolloutAnnotation]; r != "" {
		p(0, "Rolled Back:\t%s (until the manifest changes; see podvisor rollout history)", r)
	}
	if len(pod.Spec.InitContainers) > 0 {
		p(0, "Init Containers:")
		describeContainers(p, pod, pod.Spec.InitContainers, pod.Status.InitContainerStatuses, probeResults, now)
	}
	p(0, "Containers:")
	describeContainers(p, pod, pod.Spec.Containers, pod.Status.ContainerStatuses, probeResults, now)
	if len(pod.Status.Conditions) > 0 {
		p(0, "Conditions:")
		p(1, "Type\tStatus")
		for _, c := range pod.Status.Conditions {
			p(1, "%s \t%s ", c.Type, c.Status)
		}
	}
	p(0, "Volumes:")
	if len(pod.Spec.Volumes) == 0 {
		p(1, "<none>")
	}
	for _, v := range pod.Spec.Volumes {
		p(1, "%s:", v.Name)
		switch {
		case v.HostPath != nil:
			t := ""
			if v.HostPath.Type != nil {
				t = string(*v.HostPath.Type)
			}
			p(2, "Type:\tHostPath (bare host directory volume)")
			p(2, "Path:\t%s", v.HostPath.Path)
			p(2, "HostPathType:\t%s", t)
		case v.EmptyDir != nil:
			p(2, "Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)")
			p(2, "Medium:\t%s", v.EmptyDir.Medium)
			if v.EmptyDir.SizeLimit != nil {
				p(2, "SizeLimit:\t%s", v.EmptyDir.SizeLimit.String())
			} else {
				p(2, "SizeLimit:\t<unset>")
			}
		case v.ConfigMap != nil, v.Secret != nil, v.DownwardAPI != nil, v.Projected != nil:
			describeObjectVolume(p, &v.VolumeSource)
		case v.PersistentVolumeClaim != nil:
			p(2, "Type:\tPersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)")
			p(2, "ClaimName:\t%s", v.PersistentVolumeClaim.ClaimName)
			p(2, "ReadOnly:\t%t", v.PersistentVolumeClaim.ReadOnly)
		default:
			p(2, "Type:\t<unknown>")
		}
	}
	p(0, "QoS Class:\t%s", pod.Status.QOSClass)
	p(0, "Node-Selectors:\t%s", mapString(pod.Spec.NodeSelector))
	p(0, "Tolerations:\t%s", orNone(tolerationsString(pod.Spec.Tolerations)))
	describeEvents(p, pod, events, now)
	return tw.Flush()
}

type printer func(indent int, format string, args ...any)

// describeObjectVolume prints a configMap, secret, downwardAPI or
// projected volume as kubectl describe pod does (its
// printConfigMapVolumeSource and siblings), and the items each maps; an
// optional reference's *bool as its value, not kubectl's pointer.
func describeObjectVolume(p printer, v *v1.VolumeSource) {
	items := func(indent int, ks []v1.KeyToPath) {
		for _, it := range ks {
			p(indent, "%s -> %s", it.Key, it.Path)
		}
	}
	downward := func(indent int, fs []v1.DownwardAPIVolumeFile) {
		for _, f := range fs {
			if f.FieldRef != nil {
				p(indent, "%s -> %s", f.FieldRef.FieldPath, f.Path)
			}
			if f.ResourceFieldRef != nil {
				p(indent, "%s -> %s", f.ResourceFieldRef.Resource, f.Path)
			}
		}
	}
	switch {
	case v.ConfigMap != nil:
		p(2, "Type:\tConfigMap (a volume populated by a ConfigMap)")
		p(2, "Name:\t%s", v.ConfigMap.Name)
		p(2, "Optional:\t%t", v.ConfigMap.Optional != nil && *v.ConfigMap.Optional)
		if len(v.ConfigMap.Items) > 0 {
			p(2, "Items:")
			items(3, v.ConfigMap.Items)
		}
	case v.Secret != nil:
		p(2, "Type:\tSecret (a volume populated by a Secret)")
		p(2, "SecretName:\t%s", v.Secret.SecretName)
		p(2, "Optional:\t%t", v.Secret.Optional != nil && *v.Secret.Optional)
		if len(v.Secret.Items) > 0 {
			p(2, "Items:")
			items(3, v.Secret.Items)
		}
	case v.DownwardAPI != nil:
		p(2, "Type:\tDownwardAPI (a volume populated by information about the pod)")
		p(2, "Items:")
		downward(3, v.DownwardAPI.Items)
	case v.Projected != nil:
		p(2, "Type:\tProjected (a volume that contains injected data from multiple sources)")
		for _, src := range v.Projected.Sources {
			switch {
			case src.Secret != nil:
				p(2, "SecretName:\t%s", src.Secret.Name)
				p(2, "SecretOptionalName:\t%s", optionalString(src.Secret.Optional))
				items(3, src.Secret.Items)
			case src.DownwardAPI != nil:
				p(2, "DownwardAPI:\ttrue")
				downward(3, src.DownwardAPI.Items)
			case src.ConfigMap != nil:
				p(2, "ConfigMapName:\t%s", src.ConfigMap.Name)
				p(2, "ConfigMapOptional:\t%s", optionalString(src.ConfigMap.Optional))
				items(3, src.ConfigMap.Items)
			case src.ServiceAccountToken != nil:
				exp := int64(3600)
				if src.ServiceAccountToken.ExpirationSeconds != nil {
					exp = *src.ServiceAccountToken.ExpirationSeconds
				}
				p(2, "TokenExpirationSeconds:\t%d", exp)
			}
		}
	}
}

// optionalString is an optional *bool as kubectl means to print it.
func optionalString(b *bool) string {
	if b == nil {
		return "<nil>"
	}
	return fmt.Sprint(*b)
}

// message is a text a container controls (a termination or probe message,
// an event about it) as describe prints it in column col of a line
// indented indent times: cut to a screenful, its later lines in the same
// column. The printer escapes it.
func message(indent, col int, msg string) string {
	return strings.ReplaceAll(cutMessage(msg), "\n", "\n"+strings.Repeat("  ", indent)+strings.Repeat("\t", col))
}

func nodeString(pod *v1.Pod) string {
	if pod.Spec.NodeName == "" {
		return "<none>"
	}
	if pod.Status.HostIP != "" {
		return pod.Spec.NodeName + "/" + pod.Status.HostIP
	}
	return pod.Spec.NodeName
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func printMap(p printer, title string, m map[string]string) {
	if len(m) == 0 {
		p(0, "%s:\t<none>", title)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		t := ""
		if i == 0 {
			t = title + ":"
		}
		p(0, "%s\t%s=%s", t, k, m[k])
	}
}

func mapString(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return orNone(strings.Join(parts, ","))
}

func tolerationsString(ts []v1.Toleration) string {
	var parts []string
	for _, t := range ts {
		s := t.Key
		if t.Operator == v1.TolerationOpEqual || t.Value != "" {
			s += "=" + t.Value
		}
		if t.Effect != "" {
			s += ":" + string(t.Effect)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func describeContainers(p printer, pod *v1.Pod, cs []v1.Container, statuses []v1.ContainerStatus, results status.ProbeResults, now time.Time) {
	byName := map[string]v1.ContainerStatus{}
	for _, s := range statuses {
		byName[s.Name] = s
	}
	for _, c := range cs {
		st, ok := byName[c.Name]
		p(1, "%s:", c.Name)
		if ok {
			p(2, "Container ID:\t%s", st.ContainerID)
		}
		image := c.Image
		if ok && st.Image != "" {
			image = st.Image
		}
		p(2, "Image:\t%s", image)
		if ok {
			p(2, "Image ID:\t%s", st.ImageID)
		}
		for _, port := range c.Ports {
			p(2, "Port:\t%d/%s", port.ContainerPort, port.Protocol)
			if port.HostPort != 0 {
				p(2, "Host Port:\t%d/%s", port.HostPort, port.Protocol)
			}
		}
		if len(c.Command) > 0 {
			p(2, "Command:")
			for _, a := range c.Command {
				p(3, "%s", a)
			}
		}
		if len(c.Args) > 0 {
			p(2, "Args:")
			for _, a := range c.Args {
				p(3, "%s", a)
			}
		}
		if ok {
			describeState(p, "State", st.State)
			if st.LastTerminationState.Terminated != nil || st.LastTerminationState.Waiting != nil || st.LastTerminationState.Running != nil {
				describeState(p, "Last State", st.LastTerminationState)
			}
			p(2, "Ready:\t%s", boolString(st.Ready))
			p(2, "Restart Count:\t%d", st.RestartCount)
		}
		describeResources(p, "Limits", c.Resources.Limits)
		describeResources(p, "Requests", c.Resources.Requests)
		for _, pr := range []struct {
			title, key string
			probe      *v1.Probe
		}{{"Liveness", "liveness", c.LivenessProbe}, {"Readiness", "readiness", c.ReadinessProbe}, {"Startup", "startup", c.StartupProbe}} {
			if pr.probe == nil {
				continue
			}
			p(2, "%s:\t%s", pr.title, describeProbe(pr.probe))
			if r, ok := results[c.Name][pr.key]; ok {
				last := r.Result + " " + sinceString(metav1.NewTime(r.Time), now) + " ago"
				if r.Message != "" {
					last += ": " + r.Message
				}
				p(3, "Last Result:\t%s", message(3, 1, last))
			}
		}
		describeEnv(p, pod, &c)
		if len(c.VolumeMounts) == 0 {
			p(2, "Mounts:\t<none>")
		} else {
			p(2, "Mounts:")
			for _, m := range c.VolumeMounts {
				mode := "rw"
				if m.ReadOnly {
					mode = "ro"
				}
				sub := ""
				if m.SubPath != "" {
					sub = ", path = \"" + m.SubPath + "\""
				}
				p(3, "%s from %s (%s%s)", m.MountPath, m.Name, mode, sub)
			}
		}
	}
}

func describeState(p printer, title string, s v1.ContainerState) {
	switch {
	case s.Running != nil:
		p(2, "%s:\tRunning", title)
		p(3, "Started:\t%s", s.Running.StartedAt.Format(describeTime))
	case s.Waiting != nil:
		p(2, "%s:\tWaiting", title)
		if s.Waiting.Reason != "" {
			p(3, "Reason:\t%s", s.Waiting.Reason)
		}
		if s.Waiting.Message != "" {
			p(3, "Message:\t%s", message(3, 1, s.Waiting.Message))
		}
	case s.Terminated != nil:
		t := s.Terminated
		p(2, "%s:\tTerminated", title)
		if t.Reason != "" {
			p(3, "Reason:\t%s", t.Reason)
		}
		if t.Message != "" {
			p(3, "Message:\t%s", message(3, 1, strings.TrimRight(t.Message, "\n")))
		}
		p(3, "Exit Code:\t%d", t.ExitCode)
		if t.Signal != 0 {
			p(3, "Signal:\t%d", t.Signal)
		}
		p(3, "Started:\t%s", t.StartedAt.Format(describeTime))
		p(3, "Finished:\t%s", t.FinishedAt.Format(describeTime))
	default:
		p(2, "%s:\tWaiting", title)
	}
}

func describeResources(p printer, title string, l v1.ResourceList) {
	if len(l) == 0 {
		return
	}
	p(2, "%s:", title)
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		q := l[v1.ResourceName(n)]
		p(3, "%s:\t%s", n, q.String())
	}
}

func boolString(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func describeEvents(p printer, pod *v1.Pod, events []v1.Event, now time.Time) {
	var mine []v1.Event
	for _, e := range events {
		if e.InvolvedObject.UID == pod.UID && e.InvolvedObject.Name == pod.Name {
			mine = append(mine, e)
		}
	}
	printEvents(p, mine, now)
}

// printEvents prints kubectl describe's Events section, oldest first.
func printEvents(p printer, mine []v1.Event, now time.Time) {
	if len(mine) == 0 {
		p(0, "Events:\t<none>")
		return
	}
	sort.SliceStable(mine, func(i, j int) bool { return mine[i].LastTimestamp.Before(&mine[j].LastTimestamp) })
	p(0, "Events:")
	p(1, "Type\tReason\tAge\tFrom\tMessage")
	p(1, "----\t------\t----\t----\t-------")
	for _, e := range mine {
		age := sinceString(e.LastTimestamp, now)
		if e.Count > 1 {
			age = fmt.Sprintf("%s (x%d over %s)", age, e.Count, sinceString(e.FirstTimestamp, now))
		}
		from := e.Source.Component
		if from == "" {
			from = e.ReportingController
		}
		p(1, "%s\t%s\t%s\t%s\t%s", e.Type, e.Reason, age, from, message(1, 4, strings.TrimSpace(e.Message)))
	}
}

// describeProbe is a probe as kubectl describe shows it.
func describeProbe(pr *v1.Probe) string {
	attrs := fmt.Sprintf("delay=%ds timeout=%ds period=%ds #success=%d #failure=%d",
		pr.InitialDelaySeconds, pr.TimeoutSeconds, pr.PeriodSeconds, pr.SuccessThreshold, pr.FailureThreshold)
	switch {
	case pr.Exec != nil:
		return fmt.Sprintf("exec %v %s", pr.Exec.Command, attrs)
	case pr.HTTPGet != nil:
		u := &url.URL{Scheme: strings.ToLower(string(pr.HTTPGet.Scheme)), Path: pr.HTTPGet.Path, Host: pr.HTTPGet.Host}
		if port := pr.HTTPGet.Port.String(); port != "" {
			u.Host = net.JoinHostPort(pr.HTTPGet.Host, port)
		}
		return fmt.Sprintf("http-get %s %s", u, attrs)
	case pr.TCPSocket != nil:
		return fmt.Sprintf("tcp-socket %s:%s %s", pr.TCPSocket.Host, pr.TCPSocket.Port.String(), attrs)
	case pr.GRPC != nil:
		service := ""
		if pr.GRPC.Service != nil {
			service = *pr.GRPC.Service
		}
		return fmt.Sprintf("grpc <pod>:%d %s %s", pr.GRPC.Port, service, attrs)
	}
	return "unknown " + attrs
}
