package doctor

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/pressure"
)

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// want checks that fs has a finding of check with status whose message
// holds words, and a fix unless ok.
func want(t *testing.T, fs []Finding, check string, status Status, words ...string) {
	t.Helper()
	for _, f := range fs {
		if f.Check != check || f.Status != status {
			continue
		}
		all := true
		for _, w := range words {
			all = all && strings.Contains(f.Message, w)
		}
		if all {
			if status != OK && f.Fix == "" {
				t.Errorf("%s %s %q: no fix", check, status, f.Message)
			}
			return
		}
	}
	t.Errorf("no %s %s finding with %q in %+v", check, status, words, fs)
}

func TestSysctls(t *testing.T) {
	proc := t.TempDir()
	o := Options{ProcRoot: proc}
	want(t, checkSysctls(o, nil), "ip_forward", Fail, "read net.ipv4.ip_forward")
	write(t, filepath.Join(proc, "sys/net/ipv4/ip_forward"), "0\n", 0o644)
	want(t, checkSysctls(o, nil), "ip_forward", Fail, "net.ipv4.ip_forward is 0")
	dir := t.TempDir()
	write(t, filepath.Join(dir, "10-br.conflist"), `{"cniVersion":"1.0.0","name":"br","plugins":[{"type":"bridge","isGateway":true}]}`, 0o644)
	net, _ := checkCNI(Options{CNIConfDir: dir, CNIBinDirs: []string{dir}})
	fs := checkSysctls(o, net)
	want(t, fs, "ip_forward", Warn, "bridge plugin of network br turns it on")
	want(t, fs, "br_netfilter", Warn, "br_netfilter is not loaded")
	write(t, filepath.Join(proc, "sys/net/ipv4/ip_forward"), "1\n", 0o644)
	write(t, filepath.Join(proc, "sys/net/bridge/bridge-nf-call-iptables"), "1\n", 0o644)
	fs = checkSysctls(o, net)
	want(t, fs, "ip_forward", OK)
	want(t, fs, "br_netfilter", OK)
}

func TestCgroups(t *testing.T) {
	proc, root := t.TempDir(), t.TempDir()
	o := Options{ProcRoot: proc, CgroupRoot: root}
	write(t, filepath.Join(proc, "cgroups"), "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t1\t1\t1\nmemory\t4\t1\t0\npids\t8\t1\t1\n", 0o644)
	for _, d := range []string{"cpu,cpuacct", "memory", "pids"} {
		os.Mkdir(filepath.Join(root, d), 0o755)
	}
	want(t, checkCgroups(o), "cgroups", Fail, "cgroup v1", "lacks the controllers memory")
	write(t, filepath.Join(root, "cgroup.controllers"), "cpuset cpu io memory pids\n", 0o644)
	want(t, checkCgroups(o), "cgroups", OK, "cgroup v2")
}

func TestCNI(t *testing.T) {
	conf, bin := t.TempDir(), t.TempDir()
	o := Options{CNIConfDir: conf, CNIBinDirs: []string{bin}}
	for _, p := range []string{"loopback", "bridge", "host-local"} {
		write(t, filepath.Join(bin, p), "#!/bin/sh\n", 0o755)
	}
	_, fs := checkCNI(o)
	want(t, fs, "cni", Fail, "plugin portmap not found in "+bin)
	write(t, filepath.Join(conf, "10-x.conflist"), `{"cniVersion":"1.0.0","name":"x","plugins":[{"type":"bridge","ipam":{"type":"dhcp"}}]}`, 0o644)
	write(t, filepath.Join(conf, "05-bad.conf"), `{`, 0o644)
	_, fs = checkCNI(o)
	want(t, fs, "cni", Fail, "network x", "plugin dhcp not found")
	want(t, fs, "cni", Warn, "05-bad.conf is not a valid CNI config")
	write(t, filepath.Join(bin, "dhcp"), "#!/bin/sh\n", 0o755)
	_, fs = checkCNI(o)
	want(t, fs, "cni", OK, "loopback, bridge, dhcp")
}

const pod = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: main, image: busybox:1.36}, {name: side, image: example.invalid/nope:1}]
`

func TestManifestsAndImages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	images := t.TempDir()
	o := Options{Manifests: dir, NodeName: "n", ImagesDir: images, ContainerdNamespace: "podvisor"}
	_, fs := checkManifests(o)
	want(t, fs, "manifests", Warn, "manifests directory")
	write(t, filepath.Join(dir, "web.yaml"), pod, 0o644)
	os.Chmod(dir, 0o755)
	snap, fs := checkManifests(o)
	want(t, fs, "manifests", OK, "1 pods")

	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	idx := `{"manifests":[{"annotations":{"org.opencontainers.image.ref.name":"1.36"}}]}`
	tw.WriteHeader(&tar.Header{Name: "index.json", Mode: 0o644, Size: int64(len(idx))})
	tw.Write([]byte(idx))
	tw.Close()
	write(t, filepath.Join(images, "busybox.tar"), b.String(), 0o644)
	fs = checkImages(context.Background(), o, snap, &containerdConn{err: os.ErrNotExist})
	want(t, fs, "images", Fail, "image example.invalid/nope:1: containerd is unreachable")
	for _, f := range fs {
		if strings.Contains(f.Message, "busybox") {
			t.Errorf("busybox is in the images dir: %+v", f)
		}
	}

	// A Secret others can read: a warning with the chmod; none at 0600.
	secret := filepath.Join(dir, "creds.yaml")
	write(t, secret, "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {pin: \"1234\"}\n", 0o644)
	_, fs = checkManifests(o)
	want(t, fs, "manifests", Warn, secret, "holds a Secret and is readable by its group and others")
	if f := findingWith(fs, secret); f == nil || f.Fix != "chmod 600 "+secret+" (the Secret's values are readable by whoever can read the file)" {
		t.Errorf("finding %+v, want the fix chmod 600 %s", f, secret)
	}
	os.Chmod(secret, 0o600)
	_, fs = checkManifests(o)
	want(t, fs, "manifests", OK, "1 pods")
	if f := findingWith(fs, secret); f != nil {
		t.Errorf("a 0600 Secret: %+v", f)
	}

	os.Chmod(dir, 0o777)
	_, fs = checkManifests(o)
	want(t, fs, "manifests", Fail, dir, "world-writable")
	o.Parse.AllowInsecure = true
	_, fs = checkManifests(o)
	want(t, fs, "manifests", Warn, dir, "world-writable")
}

func TestDisks(t *testing.T) {
	dir := t.TempDir()
	o := Options{StateDir: filepath.Join(dir, "missing", "state"), LogDir: dir, ImagesDir: dir}
	fs := checkDisks(o)
	want(t, fs, "disk", OK, "--state-dir "+dir)
	hard, _ := pressure.ParseStatements("nodefs.available<1Pi")
	soft, _ := pressure.ParseStatements("imagefs.inodesFree<1Pi")
	soft[0].Soft = true
	o.Thresholds = append(hard, soft...)
	fs = checkDisks(o)
	want(t, fs, "disk", Fail, "--log-dir "+dir, "below the eviction threshold nodefs.available<1Pi")
	want(t, fs, "disk", Warn, "--images-dir "+dir, "below the soft eviction threshold")
}

func TestClockAndBootID(t *testing.T) {
	proc := t.TempDir()
	want(t, checkClock(Options{ProcRoot: proc}), "boot-id", Fail, "boot ID")
	write(t, filepath.Join(proc, "sys/kernel/random/boot_id"), "abc\n", 0o444)
	want(t, checkClock(Options{ProcRoot: proc}), "boot-id", OK, "boot ID abc")
}

func TestUnreachable(t *testing.T) {
	dir := t.TempDir()
	o := Options{ContainerdAddress: filepath.Join(dir, "nobody.sock"), Socket: filepath.Join(dir, "podvisor.sock")}
	o.defaults()
	c := dialContainerd(context.Background(), o)
	want(t, []Finding{c.finding(o)}, "containerd", Fail, "nobody.sock")
	want(t, []Finding{checkPodvisor(context.Background(), o)}, "podvisor", Warn, "not running")
	o.Path = dir
	want(t, checkRuntime(context.Background(), o), "runc", Fail, "runc not found")
}

// findingWith returns the first finding whose message names s.
func findingWith(fs []Finding, s string) *Finding {
	for i := range fs {
		if strings.Contains(fs[i].Message, s) {
			return &fs[i]
		}
	}
	return nil
}
