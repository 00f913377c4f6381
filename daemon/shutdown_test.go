package daemon

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/pressure"
	"github.com/podvisor/podvisor/shutdown"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

// The file holds shutdownGracePeriodByPodPriority as kubelet's list, and
// WriteConfig writes it back so.
func TestShutdownPeriodsFile(t *testing.T) {
	c := Default()
	file := header + `shutdownGracePeriodByPodPriority:
- priority: 0
  shutdownGracePeriodSeconds: 20
- priority: 2000000000
  shutdownGracePeriodSeconds: 10
`
	if err := ReadConfig("p.yaml", []byte(file), &c); err != nil {
		t.Fatal(err)
	}
	want := shutdown.Periods{{Priority: 0, Grace: 20 * time.Second}, {Priority: 2000000000, Grace: 10 * time.Second}}
	if got := c.shutdownPeriods(); got.String() != want.String() {
		t.Errorf("periods = %s, want %s", got, want)
	}
	var buf bytes.Buffer
	if err := WriteConfig(&buf, c); err != nil {
		t.Fatal(err)
	}
	back := Default()
	if err := ReadConfig("back.yaml", buf.Bytes(), &back); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if back.ShutdownGracePeriodByPodPriority.String() != want.String() {
		t.Errorf("written and read back: %s, want %s\n%s", back.ShutdownGracePeriodByPodPriority, want, buf.String())
	}
	for _, tc := range []struct{ file, want string }{
		{header + "shutdownGracePeriodByPodPriority:\n- priority: 0\n  seconds: 3\n", "p.yaml:4: shutdownGracePeriodByPodPriority: line 5: unknown key seconds"},
		{header + "shutdownGracePeriodByPodPriority:\n- priority: 0\n  shutdownGracePeriodSeconds: -1\n", "want an integer priority and a shutdownGracePeriodSeconds of 0 or more"},
		{header + "shutdownGracePeriodByPodPriority:\n- priority: 0\n  shutdownGracePeriodSeconds: 1\n- priority: 0\n  shutdownGracePeriodSeconds: 2\n", "priority 0 given twice"},
		{header + "shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n", "shutdownGracePeriodCriticalPods: invalid shutdown grace period: the critical pods' period 20s exceeds the whole period 10s"},
	} {
		c := Default()
		err := ReadConfig("p.yaml", []byte(tc.file), &c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.file, err, tc.want)
		}
	}
}

// The defaults are on: 20s for the other pods, then 10s for the critical.
func TestShutdownDefaults(t *testing.T) {
	c := Default()
	want := "2000000000=10s,0=20s"
	if got := c.shutdownPeriods().String(); got != want {
		t.Errorf("default periods = %s, want %s", got, want)
	}
	c.ShutdownGracePeriod, c.ShutdownGracePeriodCriticalPods = 0, 0
	if got := c.shutdownPeriods(); got != nil {
		t.Errorf("periods with --shutdown-grace-period 0 = %s, want none", got)
	}
}

// GET /node's Ready is the mirrored Node's (status.NodeReady) from the
// same health: kubelet's reasons, and while the node shuts down its
// message, alone or joined with another error as kubelet joins them.
func TestNodeViewReady(t *testing.T) {
	pm := pressure.NewManager(pressure.Options{})
	for _, health := range []error{
		nil,
		status.NodeHealth(nil, shutdown.ErrShuttingDown),
		status.NodeHealth(errors.New("containerd is not reachable"), shutdown.ErrShuttingDown),
	} {
		n := nodeView{name: "n", started: time.Unix(1000, 0), health: func() error { return health }, pm: pm}.Node()
		want := status.NodeReady(health)
		i := slices.IndexFunc(n.Conditions, func(c v1.NodeCondition) bool { return c.Type == v1.NodeReady })
		if i != len(n.Conditions)-1 {
			t.Fatalf("%v: Ready at %d of %d conditions, want last (as kubelet keeps it)", health, i, len(n.Conditions))
		}
		got := n.Conditions[i]
		if got.Status != want.Status || got.Reason != want.Reason || got.Message != want.Message {
			t.Errorf("%v: Ready %s/%s %q, want %s/%s %q", health, got.Status, got.Reason, got.Message, want.Status, want.Reason, want.Message)
		}
	}
	if got := status.NodeHealth(nil, shutdown.ErrShuttingDown).Error(); got != shutdown.NodeMessage {
		t.Errorf("shutting down alone: %q, want kubelet's %q", got, shutdown.NodeMessage)
	}
}
