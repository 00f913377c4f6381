package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/test/testimage"
	v1 "k8s.io/api/core/v1"
)

// TestExampleWeb runs examples/web.yaml as shipped: its init container
// fills an emptyDir before httpd serves it.
func TestExampleWeb(t *testing.T) {
	d := newDaemon(t)
	d.start()
	b, err := os.ReadFile("../../examples/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d.writeManifest("web.yaml", string(b))
	p := d.waitPod("web-"+node, 60*time.Second, "Running", running)
	init := p.Status.InitContainerStatuses
	if len(init) != 1 || init[0].State.Terminated == nil || init[0].State.Terminated.Reason != "Completed" {
		t.Fatalf("init container status = %+v", init)
	}
	if c := conditionStatus(p, v1.PodInitialized); c != v1.ConditionTrue {
		t.Errorf("Initialized = %s", c)
	}
	// The page the init container wrote.
	d.waitHTTP("http://"+p.Status.PodIP+"/", "hello from web-"+node+"\n")
}

func conditionStatus(p *v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// TestRestartPolicies: Never and OnFailure pods end in Succeeded or
// Failed as kubelet decides, and a finished pod gives its IP back;
// OnFailure restarts a failing container.
func TestRestartPolicies(t *testing.T) {
	d := newDaemon(t)
	d.start()
	pod := func(name, policy, cmd string) string {
		return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  restartPolicy: ` + policy + `
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "` + cmd + `"]
`
	}
	d.writeManifest("ok.yaml", pod("ok", "Never", "exit 0"))
	d.writeManifest("fail.yaml", pod("fail", "Never", "echo bye > /dev/termination-log; exit 3"))
	d.writeManifest("retry.yaml", pod("retry", "OnFailure", "exit 1"))

	d.waitPod("ok-"+node, 60*time.Second, "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	p := d.waitPod("fail-"+node, 60*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	term := containerStatus(p, "main").State.Terminated
	if term == nil || term.ExitCode != 3 || term.Reason != "Error" || term.Message != "bye\n" {
		t.Errorf("terminated state = %+v", term)
	}
	// First restart at once, then kubelet's back-off: CrashLoopBackOff
	// with restartCount 1.
	d.waitPod("retry-"+node, 60*time.Second, "CrashLoopBackOff", func(p *v1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs.RestartCount == 1 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" &&
			cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode == 1
	})
	d.poll("finished pods to release their IPs", 20*time.Second, func() (bool, string) {
		ips := d.newIPs()
		return len(ips) == 1, strings.Join(ips, " ")
	})
}

// TestAlwaysPullAirGapped: imagePullPolicy Always with no registry
// reachable uses the local image, with a Warning event.
func TestAlwaysPullAirGapped(t *testing.T) {
	d := newDaemon(t)
	// .test is a reserved TLD: the pull fails without any traffic leaving.
	if err := testimage.Build(filepath.Join(d.images, "always.tar"), testimage.Options{Ref: "podvisor.test/always:latest"}); err != nil {
		t.Fatal(err)
	}
	d.start()
	d.writeManifest("always.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: always
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: podvisor.test/always:latest
    imagePullPolicy: Always
    command: ["sleep", "3600"]
`)
	d.waitPod("always-"+node, 60*time.Second, "Running", running)
	c := api.NewClient(d.sock)
	d.poll("a warning event about the pull", 10*time.Second, func() (bool, string) {
		evs, err := c.Events(context.Background())
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Type == v1.EventTypeWarning && e.Reason == "PullFailedUsingLocal" && e.InvolvedObject.Name == "always-"+node {
				return true, ""
			}
		}
		return false, "no PullFailedUsingLocal event"
	})
}

// TestHostNetworkAndEmptyDir: a hostNetwork pod gets no CNI attachment
// and reports the node IP; its emptyDir survives container restarts.
func TestHostNetworkAndEmptyDir(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("host.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: host
spec:
  hostNetwork: true
  restartPolicy: OnFailure
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo run >> /data/runs; wc -l < /data/runs > /dev/termination-log; exit 1"]
    volumeMounts:
    - {name: data, mountPath: /data}
  volumes:
  - name: data
    emptyDir: {}
`)
	p := d.waitPod("host-"+node, 60*time.Second, "second run's message", func(p *v1.Pod) bool {
		cs := containerStatus(p, "main")
		last := cs.LastTerminationState.Terminated
		return cs.RestartCount == 1 && last != nil && strings.TrimSpace(last.Message) == "2"
	})
	if p.Status.PodIP != "127.0.0.1" {
		t.Errorf("hostNetwork pod IP = %q, want the node IP 127.0.0.1", p.Status.PodIP)
	}
	if ips := d.newIPs(); len(ips) != 0 {
		t.Errorf("hostNetwork pod allocated IPs %v", ips)
	}
}

// TestOOMKilled: a container that outgrows its memory limit is killed by
// the kernel and reported as OOMKilled, as kubelet reports it.
func TestOOMKilled(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("hog.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: hog
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo ${#x}"]
    resources:
      limits: {memory: 16Mi}
`)
	p := d.waitPod("hog-"+node, 60*time.Second, "terminated", func(p *v1.Pod) bool {
		return containerStatus(p, "main").State.Terminated != nil
	})
	if term := containerStatus(p, "main").State.Terminated; term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("terminated = %+v, want OOMKilled, exit 137", term)
	}
}

// TestHostPort: a hostPort reaches the pod through CNI's portmap plugin
// (on loopback only: the test sends no traffic elsewhere).
func TestHostPort(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("hp.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: hp
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /www && echo via-hostport > /www/index.html && exec httpd -f -p 8080 -h /www"]
    ports:
    - {containerPort: 8080, hostPort: 18931, hostIP: 127.0.0.1}
`)
	d.waitPod("hp-"+node, 60*time.Second, "Running", running)
	d.waitHTTP("http://127.0.0.1:18931/", "via-hostport\n")
}
