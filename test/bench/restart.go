package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
)

// restartAfterKill kills the container of the one pod name with SIGKILL
// and returns the time from the kill to the next container's first
// instruction (restartPolicy Always, the first restart: no back-off).
func (p *pvCase) restartAfterKill(ctx context.Context, name string) (time.Duration, error) {
	file := filepath.Join(p.hostRoot, name, startedFile)
	// The pod is Running with its container ready: podvisor has nothing
	// else to do for it when the kill comes.
	var id string
	err := pollUntil(ctx, 30*time.Second, 20*time.Millisecond, "pod "+name+" running", func() (bool, error) {
		pod, err := p.api.Pod(ctx, name)
		if err != nil {
			return false, err
		}
		if pod.Status.Phase != v1.PodRunning || len(pod.Status.ContainerStatuses) != 1 || !pod.Status.ContainerStatuses[0].Ready {
			return false, fmt.Errorf("phase %s", pod.Status.Phase)
		}
		id = pod.Status.ContainerStatuses[0].ContainerID
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	_, id, _ = strings.Cut(id, "://")
	ctr, err := p.client.LoadContainer(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("restart: container %s: %w", id, err)
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("restart: task %s: %w", id, err)
	}
	if err := os.Remove(file); err != nil {
		return 0, fmt.Errorf("restart: %w", err)
	}
	t0 := time.Now()
	if err := syscall.Kill(int(task.Pid()), syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("restart: kill %s: %w", id, err)
	}
	lat, err := waitStarted(ctx, []string{file}, t0, 30*time.Second, p.alive)
	if err != nil {
		return 0, fmt.Errorf("restart: %w\n%s", err, p.describe(ctx))
	}
	return lat[0], nil
}
