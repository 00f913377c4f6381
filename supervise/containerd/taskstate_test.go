package containerd

import (
	"testing"
	"time"

	tasktypes "github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/v2/pkg/protobuf"
	"github.com/podvisor/podvisor/supervise"
)

// TestTaskState holds that State and the relist's TaskStates read a
// task's process alike, and that an unknown status is no exit.
func TestTaskState(t *testing.T) {
	at := time.Unix(1_700_000_000, 0).UTC()
	for _, tc := range []struct {
		name string
		p    *tasktypes.Process
		want supervise.ContainerState
		err  bool
	}{
		{"running", &tasktypes.Process{ID: "a", Pid: 42, Status: tasktypes.Status_RUNNING},
			supervise.ContainerState{Exists: true, HasTask: true, Running: true, Pid: 42}, false},
		{"paused is running", &tasktypes.Process{ID: "a", Pid: 42, Status: tasktypes.Status_PAUSED},
			supervise.ContainerState{Exists: true, HasTask: true, Running: true, Pid: 42}, false},
		{"stopped", &tasktypes.Process{ID: "a", Pid: 42, Status: tasktypes.Status_STOPPED, ExitStatus: 137, ExitedAt: protobuf.ToTimestamp(at)},
			supervise.ContainerState{Exists: true, HasTask: true, Pid: 42, ExitCode: 137, ExitedAt: at}, false},
		{"created", &tasktypes.Process{ID: "a", Status: tasktypes.Status_CREATED},
			supervise.ContainerState{Exists: true, HasTask: true}, false},
		{"unknown", &tasktypes.Process{ID: "a", Pid: 42, Status: tasktypes.Status_UNKNOWN}, supervise.ContainerState{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := taskState(tc.p)
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want error: %v", err, tc.err)
			}
			if err == nil && !got.ExitedAt.Equal(tc.want.ExitedAt) {
				t.Errorf("ExitedAt %v, want %v", got.ExitedAt, tc.want.ExitedAt)
			}
			got.ExitedAt, tc.want.ExitedAt = time.Time{}, time.Time{}
			if err == nil && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
