package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// cdiSpec is a CDI spec of kind example.com/dev whose devices "0" and "1"
// are the char devices dev0 (/dev/zero's 1:5) and dev1 (/dev/null's 1:3)
// under dir, each at /dev/exdev in the container with its own env and a
// file mounted at /etc/exdev-info; the spec adds EXDEV_SPEC to every
// container given one of them.
func cdiSpec(dir string) string {
	dev := func(name string) string {
		return fmt.Sprintf(`- name: %q
  containerEdits:
    env: [EXDEV_NAME=%s]
    deviceNodes: [{path: /dev/exdev, hostPath: %s}]
    mounts: [{hostPath: %s, containerPath: /etc/exdev-info, options: [ro, bind]}]
`, name, name, filepath.Join(dir, "dev"+name), filepath.Join(dir, "info"+name))
	}
	return `cdiVersion: "0.6.0"
kind: example.com/dev
containerEdits:
  env: [EXDEV_SPEC=yes]
devices:
` + dev("0") + dev("1") + fmt.Sprintf(`- name: all
  containerEdits:
    deviceNodes: [{path: /dev/exdev0, hostPath: %s}, {path: /dev/exdev1, hostPath: %s}]
`, filepath.Join(dir, "dev0"), filepath.Join(dir, "dev1"))
}

// cdiPod is a pod of one container running sleep, asking for n devices of
// example.com/dev (none when 0) and with the given annotations.
func cdiPod(name string, n int, annotations string) string {
	res := ""
	if n > 0 {
		res = fmt.Sprintf("    resources: {limits: {example.com/dev: %d}}\n", n)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  annotations: {%s}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
%s`, name, annotations, res)
}

// TestCDIDevices proves extended resources and CDI annotations as devices
// from the node's CDI specs: a pod asking example.com/dev: 1 gets one
// device, whose node it reads and writes and whose env and mount it sees;
// a pod asking more than is free is rejected as kubelet rejects it
// (Failed, OutOfexample.com/dev, naming the spec dir); a CDI annotation
// names a device; a device held is given to no other pod, across a
// podvisor restart; a device is free again once its pod is gone.
func TestCDIDevices(t *testing.T) {
	d := newDaemon(t)
	specDir, devDir := filepath.Join(d.dir, "cdi"), d.hostDir("devs")
	if err := os.MkdirAll(specDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, minor := range map[string]uint32{"0": 5, "1": 3} {
		if err := unix.Mknod(filepath.Join(devDir, "dev"+name), unix.S_IFCHR|0o666, int(unix.Mkdev(1, minor))); err != nil {
			t.Fatalf("mknod: %v", err)
		}
		if err := os.WriteFile(filepath.Join(devDir, "info"+name), []byte("device-"+name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(specDir, "example.yaml"), []byte(cdiSpec(devDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	d.extraArgs = append(d.extraArgs, "--cdi-spec-dirs", specDir+","+filepath.Join(d.dir, "cdi-missing"))

	// podvisor validate against this node's configuration: accepted, with
	// a warning for a kind no spec here defines.
	config := filepath.Join(d.dir, "config.yaml")
	if err := os.WriteFile(config, []byte("apiVersion: podvisor.io/v1alpha1\nkind: PodvisorConfiguration\ncdiSpecDirs: "+specDir+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vdir := filepath.Join(d.dir, "validate")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct{ file, manifest, warn string }{
		{"dev.yaml", cdiPod("v1", 2, `cdi.k8s.io/x: "example.com/dev=all"`), ""},
		{"fpga.yaml", strings.Replace(cdiPod("v2", 1, ""), "example.com/dev", "vendor.io/fpga", 1),
			"spec.containers[0].resources.limits[vendor.io/fpga]: no CDI spec in " + specDir + " defines devices of kind vendor.io/fpga on this node: the pod would be rejected (OutOfvendor.io/fpga)"},
	} {
		path := filepath.Join(vdir, v.file)
		if err := os.WriteFile(path, []byte(v.manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := d.runCLI("", "validate", "--node-name", node, "--config", config, path)
		if code != 0 || (v.warn == "") != !strings.Contains(out+errOut, "warning") || !strings.Contains(out+errOut, v.warn) {
			t.Errorf("podvisor validate %s: exit %d, want warning %q:\n%s%s", v.file, code, v.warn, out, errOut)
		}
	}
	d.start()

	// inside runs script in pod name's container and returns its output.
	inside := func(name, script, want string) {
		t.Helper()
		d.poll(name+": "+script, 20*time.Second, func() (bool, string) {
			out, errOut, code := d.runCLI("", "exec", name+"-"+node, "--", "sh", "-c", script)
			return code == 0 && out == want, fmt.Sprintf("exit %d: %q %s (want %q)", code, out, errOut, want)
		})
	}
	// The device's node is there and usable (dev0 reads zeros, dev1
	// nothing; both take writes), with the device's and the spec's env and
	// the device's mount.
	const probe = `echo "$EXDEV_SPEC $EXDEV_NAME $(cat /etc/exdev-info)"; ls -l /dev/exdev | cut -c1; ` +
		`echo written > /dev/exdev && echo write-ok; head -c 3 /dev/exdev | od -An -c | tr -d ' '; echo .`
	sees := func(name, dev string) {
		t.Helper()
		read := "\\0\\0\\0\n.\n"
		if dev == "1" {
			read = ".\n" // /dev/null: nothing to read (od prints nothing)
		}
		inside(name, probe, fmt.Sprintf("yes %s device-%s\nc\nwrite-ok\n%s", dev, dev, read))
	}
	rejected := func(name, reason string, parts ...string) {
		t.Helper()
		p := d.waitPod(name+"-"+node, 60*time.Second, "Failed "+reason, func(p *v1.Pod) bool {
			return p.Status.Phase == v1.PodFailed && p.Status.Reason == reason
		})
		for _, part := range append([]string{"Pod was rejected: "}, parts...) {
			if !strings.Contains(p.Status.Message, part) {
				t.Errorf("%s: status message %q, want it to hold %q", name, p.Status.Message, part)
			}
		}
		d.poll(name+": Warning event "+reason, 20*time.Second, func() (bool, string) {
			n, msgs := d.eventCount(name+"-"+node, reason, parts[0])
			return n > 0, strings.Join(msgs, "\n")
		})
		for _, cs := range p.Status.ContainerStatuses {
			if cs.ContainerID != "" {
				t.Errorf("%s: rejected pod has container %s", name, cs.ContainerID)
			}
		}
	}

	// One device of two: the lowest.
	d.writeManifest("a.yaml", cdiPod("a", 1, ""))
	d.waitPod("a-"+node, 90*time.Second, "running", running)
	sees("a", "0")

	// Two asked, one free: kubelet's rejection, naming the resource and
	// the spec dirs.
	d.writeManifest("b.yaml", cdiPod("b", 2, ""))
	rejected("b", "OutOfexample.com/dev",
		"Node didn't have enough resource: example.com/dev, requested: 2, used: 1, capacity: 2", specDir)

	// The annotation form names the other device.
	d.writeManifest("c.yaml", cdiPod("c", 0, `cdi.k8s.io/test: "example.com/dev=1"`))
	d.waitPod("c-"+node, 90*time.Second, "running", running)
	sees("c", "1")
	// ... which no other pod gets.
	d.writeManifest("d.yaml", cdiPod("d", 0, `cdi.k8s.io/test: "example.com/dev=1"`))
	rejected("d", "UnexpectedAdmissionError", "example.com/dev=1 named by annotation cdi.k8s.io/test")

	// A restarted podvisor knows what the running pods hold.
	// It admits again the pods it rejected, as kubelet after a restart:
	// still no room for them.
	d.stop(syscall.SIGTERM)
	d.start()
	rejected("b", "OutOfexample.com/dev", "requested: 2, used: 2, capacity: 2")
	rejected("d", "UnexpectedAdmissionError", "example.com/dev=1 named by annotation cdi.k8s.io/test")
	d.writeManifest("e.yaml", cdiPod("e", 1, ""))
	rejected("e", "OutOfexample.com/dev", "requested: 1, used: 2, capacity: 2")
	sees("a", "0")

	// Pod a goes: its device is free for the next pod.
	for _, f := range []string{"a", "b", "d", "e"} {
		d.removeManifest(f + ".yaml")
	}
	for _, f := range []string{"a", "b", "d", "e"} {
		d.waitGone(f+"-"+node, 60*time.Second)
	}
	d.writeManifest("f.yaml", cdiPod("f", 1, ""))
	d.waitPod("f-"+node, 90*time.Second, "running", running)
	sees("f", "0")

	for _, f := range []string{"c", "f"} {
		d.removeManifest(f + ".yaml")
	}
	for _, f := range []string{"c", "f"} {
		d.waitGone(f+"-"+node, 60*time.Second)
	}
}
