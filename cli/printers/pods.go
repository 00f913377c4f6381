package printers

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// PrintPods prints list as kubectl get pods does, with now as the current
// time for the AGE and RESTARTS columns. format is:
//   - "": a table NAME READY STATUS RESTARTS AGE;
//   - "wide": the table plus IP NODE NOMINATED NODE READINESS GATES;
//   - "json": the v1.PodList (apiVersion v1, kind PodList) as indented JSON;
//   - "yaml": the same as YAML.
//
// Any other format is an error. The table columns follow kubectl's printPod
// (pkg/printers/internalversion/printers.go); a pod whose manifest currently
// has an error (annotation podvisor.io/manifest-error) gets " (!)" after its
// name. An empty list prints nothing in table formats; kubectl's "No
// resources found" line goes to stderr and is the caller's to print.
func PrintPods(w io.Writer, list *v1.PodList, format string, now time.Time) error {
	if list == nil {
		list = &v1.PodList{}
	}
	switch format {
	case "", "wide":
		return printTable(w, list, format == "wide", now)
	case "json":
		b, err := json.MarshalIndent(typedList(list), "", "    ")
		if err != nil {
			return fmt.Errorf("encode pods as json: %w", err)
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case "yaml":
		b, err := yaml.Marshal(typedList(list))
		if err != nil {
			return fmt.Errorf("encode pods as yaml: %w", err)
		}
		_, err = w.Write(b)
		return err
	default:
		return fmt.Errorf("unknown output format %q: want one of \"\", wide, json, yaml", format)
	}
}

// typedList returns list with the TypeMeta of a PodList and of its pods set,
// as kubectl prints them.
func typedList(list *v1.PodList) *v1.PodList {
	out := list.DeepCopy()
	out.APIVersion, out.Kind = "v1", "PodList"
	for i := range out.Items {
		out.Items[i].APIVersion, out.Items[i].Kind = "v1", "Pod"
	}
	return out
}

// PodHeader is the header of kubectl's pod table (wide: with its wide
// columns).
func PodHeader(wide bool) []string {
	h := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
	if wide {
		h = append(h, "IP", "NODE", "NOMINATED NODE", "READINESS GATES")
	}
	return h
}

// PodRow is pod's row in kubectl's pod table, as PrintPods prints it.
// Its cells are escaped (Escape).
func PodRow(pod *v1.Pod, wide bool, now time.Time) []string {
	row := podRow(pod, wide, now)
	escapeAll(row)
	return row
}

func printTable(w io.Writer, list *v1.PodList, wide bool, now time.Time) error {
	if len(list.Items) == 0 {
		return nil
	}
	// kubectl's printers.GetNewTabWriter settings.
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	header := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
	if wide {
		header = append(header, "IP", "NODE", "NOMINATED NODE", "READINESS GATES")
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for i := range list.Items {
		fmt.Fprintln(tw, strings.Join(PodRow(&list.Items[i], wide, now), "\t"))
	}
	return tw.Flush()
}

// podRow is kubectl's printPod (pkg/printers/internalversion/printers.go)
// for the v1 types.
func podRow(pod *v1.Pod, wide bool, now time.Time) []string {
	restarts := 0
	restartableInitContainerRestarts := 0
	totalContainers := len(pod.Spec.Containers)
	readyContainers := 0
	var lastRestartDate, lastRestartableInitContainerRestartDate metav1.Time

	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonSchedulingGated {
			reason = v1.PodReasonSchedulingGated
		}
	}

	initContainers := make(map[string]*v1.Container, len(pod.Spec.InitContainers))
	for i := range pod.Spec.InitContainers {
		initContainers[pod.Spec.InitContainers[i].Name] = &pod.Spec.InitContainers[i]
		if isSidecar(&pod.Spec.InitContainers[i]) {
			totalContainers++
		}
	}

	later := func(cur *metav1.Time, st *v1.ContainerStatus) {
		if t := st.LastTerminationState.Terminated; t != nil && cur.Before(&t.FinishedAt) {
			*cur = t.FinishedAt
		}
	}

	initializing := false
	for i := range pod.Status.InitContainerStatuses {
		c := &pod.Status.InitContainerStatuses[i]
		restarts += int(c.RestartCount)
		later(&lastRestartDate, c)
		sidecar := isSidecar(initContainers[c.Name])
		if sidecar {
			restartableInitContainerRestarts += int(c.RestartCount)
			later(&lastRestartableInitContainerRestartDate, c)
		}
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case sidecar && c.Started != nil && *c.Started:
			if c.Ready {
				readyContainers++
			}
			continue
		case c.State.Terminated != nil:
			// initialization failed
			switch {
			case c.State.Terminated.Reason != "":
				reason = "Init:" + c.State.Terminated.Reason
			case c.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", c.State.Terminated.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", c.State.Terminated.ExitCode)
			}
			initializing = true
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + c.State.Waiting.Reason
			initializing = true
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
			initializing = true
		}
		break
	}

	if !initializing || conditionTrue(pod.Status.Conditions, v1.PodInitialized) {
		restarts = restartableInitContainerRestarts
		lastRestartDate = lastRestartableInitContainerRestartDate
		hasRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := &pod.Status.ContainerStatuses[i]
			restarts += int(c.RestartCount)
			later(&lastRestartDate, c)
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				reason = c.State.Waiting.Reason
			case c.State.Terminated != nil && c.State.Terminated.Reason != "":
				reason = c.State.Terminated.Reason
			case c.State.Terminated != nil && c.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", c.State.Terminated.Signal)
			case c.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode)
			case c.Ready && c.State.Running != nil:
				hasRunning = true
				readyContainers++
			}
		}
		// Back to "Running" if a container still reports running.
		if reason == "Completed" && hasRunning {
			if conditionTrue(pod.Status.Conditions, v1.PodReady) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil && pod.Status.Reason == "NodeLost" {
		reason = "Unknown"
	} else if pod.DeletionTimestamp != nil && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
		reason = "Terminating"
	}

	restartsStr := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestartDate.IsZero() {
		restartsStr = fmt.Sprintf("%d (%s ago)", restarts, sinceString(lastRestartDate, now))
	}

	name := pod.Name
	if pod.Annotations[status.ManifestErrorAnnotation] != "" {
		name += " (!)"
	}
	row := []string{name, fmt.Sprintf("%d/%d", readyContainers, totalContainers), reason, restartsStr, sinceString(pod.CreationTimestamp, now)}
	if !wide {
		return row
	}

	podIP := pod.Status.PodIP // what the API server converts into podIPs[0]
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	if podIP == "" {
		podIP = "<none>"
	}
	nodeName := pod.Spec.NodeName
	if nodeName == "" {
		nodeName = "<none>"
	}
	nominated := pod.Status.NominatedNodeName
	if nominated == "" {
		nominated = "<none>"
	}
	gates := "<none>"
	if len(pod.Spec.ReadinessGates) > 0 {
		trueConditions := 0
		for _, g := range pod.Spec.ReadinessGates {
			for _, c := range pod.Status.Conditions {
				if c.Type == g.ConditionType {
					if c.Status == v1.ConditionTrue {
						trueConditions++
					}
					break
				}
			}
		}
		gates = fmt.Sprintf("%d/%d", trueConditions, len(pod.Spec.ReadinessGates))
	}
	return append(row, podIP, nodeName, nominated, gates)
}

// conditionTrue reports whether the condition of type t is True.
func conditionTrue(conds []v1.PodCondition, t v1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// isSidecar reports whether c is a sidecar: an init container with
// restartPolicy Always (kubectl's isRestartableInitContainer).
func isSidecar(c *v1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}
