package printers

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/podvisor/podvisor/api"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Node prints the local node as kubectl get nodes does, with the pressure
// conditions that are True in a PRESSURE column.
func Node(w io.Writer, n *api.Node, noHeaders bool, now time.Time) error {
	var t Table
	var rows [][]string
	if !noHeaders {
		rows = append(rows, []string{"NAME", "STATUS", "PRESSURE", "AGE", "VERSION"})
	}
	status := "NotReady"
	var pressure []string
	for _, c := range n.Conditions {
		switch {
		case c.Type == v1.NodeReady && c.Status == v1.ConditionTrue:
			status = "Ready"
		case c.Type != v1.NodeReady && c.Status == v1.ConditionTrue:
			pressure = append(pressure, string(c.Type))
		}
	}
	p := "<none>"
	if len(pressure) > 0 {
		p = strings.Join(pressure, ",")
	}
	age := "<unknown>"
	if !n.StartTime.IsZero() {
		age = duration.HumanDuration(now.Sub(n.StartTime))
	}
	rows = append(rows, []string{n.Name, status, p, age, n.Version})
	return t.Print(w, rows...)
}

// DescribeNode prints the local node as kubectl describe node prints its
// conditions, then each eviction signal with what is available and its
// thresholds.
func DescribeNode(w io.Writer, n *api.Node, now time.Time) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Name:     %s\n", n.Name)
	fmt.Fprintf(&b, "Version:  %s\n", n.Version)
	if !n.StartTime.IsZero() {
		fmt.Fprintf(&b, "Started:  %s\n", n.StartTime.Format(time.RFC1123Z))
	}
	b.WriteString("Conditions:\n")
	var t Table
	rows := [][]string{
		{"  Type", "Status", "LastHeartbeatTime", "LastTransitionTime", "Reason", "Message"},
		{"  ----", "------", "-----------------", "------------------", "------", "-------"},
	}
	for _, c := range n.Conditions {
		rows = append(rows, []string{"  " + string(c.Type), string(c.Status),
			c.LastHeartbeatTime.Format(time.RFC1123Z), c.LastTransitionTime.Format(time.RFC1123Z), c.Reason, c.Message})
	}
	var tb strings.Builder
	if err := t.Print(&tb, rows...); err != nil {
		return err
	}
	b.WriteString(tb.String())
	fmt.Fprintf(&b, "Eviction Signals (measured %s ago):\n", duration.HumanDuration(now.Sub(n.Time)))
	var st Table
	rows = [][]string{
		{"  Signal", "Available", "Capacity", "Thresholds", "Met"},
		{"  ------", "---------", "--------", "----------", "---"},
	}
	for _, s := range n.Signals {
		avail, capacity := "<unknown>", "<unknown>"
		if s.Measured {
			avail, capacity = signalQuantity(s.Signal, s.Available), signalQuantity(s.Signal, s.Capacity)
		}
		th := "<none>"
		if len(s.Thresholds) > 0 {
			th = strings.Join(s.Thresholds, ", ")
		}
		met := "False"
		if s.Met {
			met = "True"
		}
		rows = append(rows, []string{"  " + s.Signal, avail, capacity, th, met})
	}
	tb.Reset()
	if err := st.Print(&tb, rows...); err != nil {
		return err
	}
	b.WriteString(tb.String())
	_, err := io.WriteString(w, b.String())
	return err
}

// signalQuantity is n as a binary quantity for the byte signals, a number
// for inodes and pids.
func signalQuantity(signal string, n uint64) string {
	if strings.HasSuffix(signal, ".available") && signal != "pid.available" {
		return resource.NewQuantity(int64(n), resource.BinarySI).String()
	}
	return fmt.Sprint(n)
}
