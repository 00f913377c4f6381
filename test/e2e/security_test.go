package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/platforms"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/test/testimage"
)

// The image the identity cases run: user app (1000) is a member of wheel
// (10) and staff (50) in its /etc/group. "ident-app" is the same image
// with USER app.
const (
	secPasswd = "root:x:0:0:root:/root:/bin/sh\n" +
		"app:x:1000:1000::/:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	secGroup = "root:x:0:\n" +
		"wheel:x:10:app\n" +
		"staff:x:50:other,app\n" +
		"app:x:1000:\n" +
		"nobody:x:65534:\n"
	secIdentRef    = "docker.io/library/ident:latest"
	secIdentAppRef = "docker.io/library/ident-app:latest"
)

// secProbe prints, from inside the container, what the security cases
// look at, one "key=value" a line, then sleeps. /proc/1 is the container's
// own process (unless hostPID): its initial environment is what the
// runtime gave it. Files come base64-encoded, on one line.
const secProbe = `grep -E '^(Uid|Gid|Groups|CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\t ' '  ' | sed 's/: */=/'
echo "pidns=$(readlink /proc/self/ns/pid)"
echo "dev=$(ls /dev | tr '\n' ' ')"
echo "hosts=$(base64 -w0 /etc/hosts)"
echo "resolv=$(base64 -w0 /etc/resolv.conf)"
echo "HOSTNAME=$(tr '\0' '\n' < /proc/1/environ | sed -n 's/^HOSTNAME=//p')"
echo "etc-hostname=$(cat /etc/hostname)"
echo "kernel-hostname=$(cat /proc/sys/kernel/hostname)"
echo "oom_score_adj=$(cat /proc/1/oom_score_adj)"
echo "apparmor=$(cat /proc/1/attr/current 2>/dev/null)"
d=/sys/fs/cgroup/memory; [ -d $d ] || d=/sys/fs/cgroup
if mkdir $d/pv-w 2>/dev/null; then rmdir $d/pv-w; echo cgroup-rw=yes; else echo cgroup-rw=no; fi
echo END
exec sleep 3600`

// secCase is one pod of TestSecurity: a manifest body (the container is
// named "probe" and runs secProbe) and what it must show.
type secCase struct {
	name string
	// spec is the pod spec's YAML below "spec:", with %s where the
	// probe container's command goes.
	spec string
	// want checks the probe's output (nil: the pod must fail instead).
	want func(t *testing.T, got map[string]string, p *v1.Pod)
	// refused, for a pod that must not start, is what the container's
	// waiting message must hold.
	refused string
}

// TestSecurity proves issue 8's identity, swap, hostname, AppArmor, OOM
// score, privileged, capability, seccomp, no-new-privileges, hostPID,
// hostAliases and dnsConfig items on real containers, one small pod a case, all under one
// podvisor: what the process is and sees is read from inside it, the swap
// limit from its cgroup. Cases this host cannot show (no AppArmor, no
// negative oom_score_adj, no swap accounting) are skipped saying so; their
// decisions are unit-tested in supervise and supervise/containerd.
func TestSecurity(t *testing.T) {
	d := newDaemon(t)
	passwd, group := filepath.Join(d.dir, "passwd"), filepath.Join(d.dir, "group")
	os.WriteFile(passwd, []byte(secPasswd), 0o644)
	os.WriteFile(group, []byte(secGroup), 0o644)
	if err := testimage.Build(filepath.Join(d.images, "ident.tar"), testimage.Options{
		Ref: secIdentRef, ExtraFiles: map[string]string{"/etc/passwd": passwd, "/etc/group": group},
	}); err != nil {
		t.Fatal(err)
	}
	d.start()
	secDeriveUserImage(t, d, secIdentRef, secIdentAppRef, "app")
	nodeName, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host := secHost(t)
	nonRootMsg := func(pod string) string {
		return `container has runAsNonRoot and image has non-numeric user (app), cannot verify user is non-root (pod: "` + pod + "-" + node + "_default("
	}

	cases := []secCase{
		{
			// The review's case: busybox ran with Groups: 0.
			name: "runas-user-group",
			spec: `  securityContext: {runAsUser: 1000, runAsGroup: 1000}
  containers:
  - {name: probe, image: busybox, imagePullPolicy: IfNotPresent, command: %s}
`,
			want: secIdentity("1000", "1000", "1000"),
		},
		{
			name: "runas-user-keeps-image-groups",
			spec: `  securityContext: {runAsUser: 1000}
  containers:
  - {name: probe, image: ident, imagePullPolicy: IfNotPresent, command: %s}
`,
			want: secIdentity("1000", "1000", "10 50 1000"),
		},
		{
			name: "runas-group-and-supplemental",
			spec: `  securityContext: {runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000]}
  containers:
  - {name: probe, image: ident, imagePullPolicy: IfNotPresent, command: %s}
`,
			want: secIdentity("1000", "3000", "10 50 3000 4000"),
		},
		{
			// The image's primary group does not stay behind as a
			// supplementary one.
			name: "image-user-runas-group",
			spec: `  containers:
  - name: probe
    image: ident-app
    imagePullPolicy: IfNotPresent
    command: %s
    securityContext: {runAsGroup: 3000}
`,
			want: secIdentity("1000", "3000", "10 50 3000"),
		},
		{
			name: "nonroot-named-user",
			spec: `  containers:
  - name: probe
    image: ident-app
    imagePullPolicy: IfNotPresent
    command: %s
    securityContext: {runAsNonRoot: true}
`,
			refused: nonRootMsg("nonroot-named-user"),
		},
		{
			name: "hostname-env",
			spec: `  containers:
  - {name: probe, image: busybox, imagePullPolicy: IfNotPresent, command: %s}
`,
			want: secValues(map[string]string{
				"HOSTNAME": "hostname-env-" + node, "etc-hostname": "hostname-env-" + node, "kernel-hostname": "hostname-env-" + node,
			}),
		},
		{
			name: "hostname-env-set",
			spec: `  containers:
  - name: probe
    image: busybox
    imagePullPolicy: IfNotPresent
    command: %s
    env: [{name: HOSTNAME, value: mine}]
`,
			want: secValues(map[string]string{"HOSTNAME": "mine"}),
		},
		{
			name: "hostnetwork-hostname",
			spec: `  hostNetwork: true
  containers:
  - {name: probe, image: busybox, imagePullPolicy: IfNotPresent, command: %s}
`,
			want: secValues(map[string]string{"HOSTNAME": nodeName, "kernel-hostname": nodeName}),
		},
		{
			// The file is supervise's (mounts.Pod.Hostname), apart from the
			// environment above.
			name: "hostnetwork-etc-hostname",
			spec: `  hostNetwork: true
  containers:
  - {name: probe, image: busybox, imagePullPolicy: IfNotPresent, command: %s}
`,
			want: secValues(map[string]string{"etc-hostname": nodeName}),
		},
		{
			// Privileged: every capability this host has (podvisor's own
			// set, as containerd's WithPrivileged takes it), the host's
			// devices, no seccomp filter, its cgroup writable.
			name: "privileged",
			spec: `  containers:
  - name: probe
    image: busybox
    imagePullPolicy: IfNotPresent
    command: %s
    securityContext: {privileged: true}
`,
			want: func(t *testing.T, got map[string]string, p *v1.Pod) {
				secValues(map[string]string{"CapEff": host.capBnd, "CapBnd": host.capBnd, "NoNewPrivs": "0", "Seccomp": "0", "cgroup-rw": "yes"})(t, got, p)
				if missing := secMissing(host.devices, got["dev"]); len(missing) > 0 {
					t.Errorf("host devices %v missing from the container's /dev: %s", missing, got["dev"])
				}
			},
		},
		{
			// Nothing set: the CRI default capabilities (CHOWN,
			// DAC_OVERRIDE, FSETID, FOWNER, MKNOD, NET_RAW, SETGID, SETUID,
			// SETFCAP, SETPCAP, NET_BIND_SERVICE, SYS_CHROOT, KILL,
			// AUDIT_WRITE), no filter (kubelet's seccomp default is
			// Unconfined), privilege escalation allowed, the runtime's
			// minimal /dev, a PID namespace of its own, its cgroup
			// read-only.
			name: "unprivileged-default",
			spec: `  containers:
  - {name: probe, image: busybox, imagePullPolicy: IfNotPresent, command: %s}
`,
			want: func(t *testing.T, got map[string]string, p *v1.Pod) {
				secValues(map[string]string{"CapEff": "00000000a80425fb", "CapBnd": "00000000a80425fb", "NoNewPrivs": "0", "Seccomp": "0", "cgroup-rw": "no"})(t, got, p)
				var extra []string
				for _, d := range host.devices {
					if !slices.Contains(secRuntimeDevices, d) && slices.Contains(strings.Fields(got["dev"]), d) {
						extra = append(extra, d)
					}
				}
				if len(extra) > 0 {
					t.Errorf("host devices %v in an unprivileged container's /dev: %s", extra, got["dev"])
				}
				if got["pidns"] == host.pidNS || got["pidns"] == "" {
					t.Errorf("pid namespace %q, want one of its own (the host's is %s)", got["pidns"], host.pidNS)
				}
			},
		},
		{
			name: "seccomp-runtime-default",
			spec: `  containers:
  - name: probe
    image: busybox
    imagePullPolicy: IfNotPresent
    command: %s
    securityContext: {seccompProfile: {type: RuntimeDefault}}
`,
			want: secValues(map[string]string{"Seccomp": "2"}), // SECCOMP_MODE_FILTER
		},
		{
			name: "seccomp-unconfined",
			spec: `  containers:
  - name: probe
    image: busybox
    imagePullPolicy: IfNotPresent
    command: %s
    securityContext: {seccompProfile: {type: Unconfined}}
`,
			want: secValues(map[string]string{"Seccomp": "0"}),
		},
		{
			name: "no-privilege-escalation",
			spec: `  containers:
  - name: probe
    image: busybox
    imagePullPolicy: IfNotPresent
    command: %s
    securityContext: {allowPrivilegeEscalation: false}
`,
			want: secValues(map[string]string{"NoNewPrivs": "1"}),
		},
		{
			// The host's PID namespace: the one this test (and the
			// containerd it started) runs in.
			name: "host-pid",
			spec: `  hostPID: true
  containers:
  - {name: probe, image: busybox, imagePullPolicy: IfNotPresent, command: %s}
`,
			want: secValues(map[string]string{"pidns": host.pidNS}),
		},
		{
			// kubelet's managedHostsFileContent and
			// hostsEntriesFromHostAliases (pkg/kubelet/kubelet_pods.go):
			// the boilerplate, "<pod IP>\t<hostname>", then one line per
			// alias, its hostnames tab-separated.
			name: "host-aliases",
			spec: `  hostAliases:
  - {ip: 10.1.2.3, hostnames: [foo.local, bar.local]}
  - {ip: "fd00::3", hostnames: [six.local]}
  containers:
  - {name: probe, image: busybox, imagePullPolicy: IfNotPresent, command: %s}
`,
			want: func(t *testing.T, got map[string]string, p *v1.Pod) {
				want := "# Kubernetes-managed hosts file.\n" +
					"127.0.0.1\tlocalhost\n" +
					"::1\tlocalhost ip6-localhost ip6-loopback\n" +
					"fe00::0\tip6-localnet\n" +
					"fe00::0\tip6-mcastprefix\n" +
					"fe00::1\tip6-allnodes\n" +
					"fe00::2\tip6-allrouters\n"
				for _, ip := range p.Status.PodIPs {
					want += ip.IP + "\t" + p.Name + "\n"
				}
				want += "\n# Entries added by HostAliases.\n" +
					"10.1.2.3\tfoo.local\tbar.local\n" +
					"fd00::3\tsix.local\n"
				if len(p.Status.PodIPs) == 0 {
					t.Errorf("pod has no IPs: %+v", p.Status)
				}
				secFile(t, got, "hosts", want)
			},
		},
		{
			// dnsPolicy None: only dnsConfig, in the format containerd's
			// CRI writes from kubelet's DNS config (search, nameserver
			// lines, options). kubelet orders options from a map; podvisor
			// keeps dnsConfig's order.
			name: "dns-none",
			spec: `  dnsPolicy: None
  dnsConfig:
    nameservers: [192.0.2.10, 192.0.2.11]
    searches: [ns1.svc.example, example]
    options: [{name: ndots, value: "2"}, {name: edns0}]
  containers:
  - {name: probe, image: busybox, imagePullPolicy: IfNotPresent, command: %s}
`,
			want: func(t *testing.T, got map[string]string, _ *v1.Pod) {
				secFile(t, got, "resolv", "search ns1.svc.example example\n"+
					"nameserver 192.0.2.10\n"+
					"nameserver 192.0.2.11\n"+
					"options ndots:2 edns0\n")
			},
		},
		{
			name: "memory-limit-no-swap",
			spec: `  containers:
  - name: probe
    image: busybox
    imagePullPolicy: IfNotPresent
    command: %s
    resources: {limits: {memory: 64Mi}}
`,
			// Read from the host: podvisor mounts no /sys/fs/cgroup into
			// containers (the CRI plugin mounts it read-only). A host that
			// does not account swap in cgroups (no memory.memsw.* on v1, no
			// memory.swap.max on v2) can limit no swap: the memory limit
			// is still set.
			want: func(t *testing.T, _ map[string]string, p *v1.Pod) {
				if !secSwapAccounted() {
					if got := cgroupValue(t, d.ns, string(p.UID), containerID(p, "probe"), "memory.limit_in_bytes", "memory.max"); got != "67108864" {
						t.Errorf("memory limit %s, want 67108864 (this host does not account swap)", got)
					}
					return
				}
				got := cgroupValue(t, d.ns, string(p.UID), containerID(p, "probe"), "memory.memsw.limit_in_bytes", "memory.swap.max")
				want := "0" // v2: swap.max
				if dirExists("/sys/fs/cgroup/memory") {
					want = "67108864" // v1: memory+swap = the limit
				}
				if got != want {
					t.Errorf("swap limit %s, want %s", got, want)
				}
			},
		},
		{
			name: "cluster-critical-not-node-critical",
			spec: `  priorityClassName: system-cluster-critical
  containers:
  - {name: probe, image: busybox, imagePullPolicy: IfNotPresent, command: %s}
`,
			want: secValues(map[string]string{"oom_score_adj": "1000"}),
		},
		{
			name: "node-critical",
			spec: `  priorityClassName: system-node-critical
  containers:
  - {name: probe, image: busybox, imagePullPolicy: IfNotPresent, command: %s}
`,
			// A host that refuses negative scores gets the lowest it
			// accepts, with a warning.
			want: func(t *testing.T, got map[string]string, p *v1.Pod) {
				if secNegativeOOMScore() {
					secValues(map[string]string{"oom_score_adj": "-997"})(t, got, p)
					return
				}
				secValues(map[string]string{"oom_score_adj": "0"})(t, got, p)
				if n, msgs := d.eventCount(p.Name, "OOMScoreAdjRefused", "this host refuses oom_score_adj -997; using 0"); n == 0 {
					t.Errorf("no OOMScoreAdjRefused warning; events: %q", msgs)
				}
			},
		},
		{
			name: "apparmor-default",
			spec: `  containers:
  - {name: probe, image: busybox, imagePullPolicy: IfNotPresent, command: %s}
`,
			// Without AppArmor the container runs unconfined: the probe
			// reads no label.
			want: func(t *testing.T, got map[string]string, p *v1.Pod) {
				secAppArmorLabel(t, got)
			},
		},
		{
			// Without AppArmor RuntimeDefault runs unconfined; with it, the
			// default profile.
			name: "apparmor-runtime-default",
			spec: `  containers:
  - name: probe
    image: busybox
    imagePullPolicy: IfNotPresent
    command: %s
    securityContext: {appArmorProfile: {type: RuntimeDefault}}
`,
			want: func(t *testing.T, got map[string]string, p *v1.Pod) {
				secAppArmorLabel(t, got)
			},
		},
		{
			name: "apparmor-localhost-missing",
			spec: `  containers:
  - name: probe
    image: busybox
    imagePullPolicy: IfNotPresent
    command: %s
    securityContext: {appArmorProfile: {type: Localhost, localhostProfile: podvisor-e2e-missing}}
`,
			refused: secLocalhostRefusal(),
		},
	}

	probe, _ := json.Marshal([]string{"sh", "-c", secProbe})
	for _, tc := range cases {
		m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  terminationGracePeriodSeconds: 1\n%s",
			tc.name, fmt.Sprintf(tc.spec, probe))
		d.writeManifest(tc.name+".yaml", m)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The daemon's helpers fail the test they are given: this one.
			d := *d
			d.t = t
			name := tc.name + "-" + node
			if tc.want == nil {
				d.waitPod(name, 60*time.Second, "refused with "+strconv.Quote(tc.refused), func(p *v1.Pod) bool {
					w := containerStatus(p, "probe").State.Waiting
					// kubelet's reason is CreateContainerConfigError.
					return w != nil && (w.Reason == "CreateContainerError" || w.Reason == "CreateContainerConfigError") &&
						strings.Contains(w.Message, tc.refused)
				})
				return
			}
			p := d.waitPod(name, 60*time.Second, "Running", running)
			tc.want(t, secOutput(t, &d, p), p)
		})
	}
}

// secHostView is what the host side of the cases compares with.
type secHostView struct {
	capBnd  string   // this process's bounding set: every capability the host has
	pidNS   string   // readlink of this process's /proc/self/ns/pid
	devices []string // names of the device nodes directly in /dev
}

// secRuntimeDevices are the nodes runc makes in every container's /dev
// (console only with a terminal; ptmx links to pts/ptmx).
var secRuntimeDevices = []string{"null", "zero", "full", "random", "urandom", "tty", "ptmx", "console"}

func secHost(t *testing.T) secHostView {
	t.Helper()
	var h secHostView
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			h.capBnd = strings.TrimSpace(v)
		}
	}
	if h.pidNS, err = os.Readlink("/proc/self/ns/pid"); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("/dev")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		// console is the one device containerd's WithHostDevices skips.
		if e.Type()&os.ModeDevice != 0 && e.Name() != "console" {
			h.devices = append(h.devices, e.Name())
		}
	}
	if h.capBnd == "" || len(h.devices) == 0 {
		t.Fatalf("host view incomplete: %+v", h)
	}
	return h
}

// secMissing returns the names of want not among the fields of list.
func secMissing(want []string, list string) []string {
	have := strings.Fields(list)
	var missing []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			missing = append(missing, w)
		}
	}
	return missing
}

// secFile checks a file the probe printed base64-encoded under key.
func secFile(t *testing.T, got map[string]string, key, want string) {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(got[key])
	if err != nil {
		t.Fatalf("%s: %v (%q)", key, err, got[key])
	}
	if string(b) != want {
		t.Errorf("%s in the container:\n%s\nwant:\n%s", key, b, want)
	}
}

// secIdentity checks the probe's Uid, Gid (real, effective, saved, fs) and
// Groups (the kernel keeps them sorted).
func secIdentity(uid, gid, groups string) func(*testing.T, map[string]string, *v1.Pod) {
	return secValues(map[string]string{
		"Uid":    strings.Repeat(uid+" ", 3) + uid,
		"Gid":    strings.Repeat(gid+" ", 3) + gid,
		"Groups": groups,
	})
}

func secValues(want map[string]string) func(*testing.T, map[string]string, *v1.Pod) {
	return func(t *testing.T, got map[string]string, _ *v1.Pod) {
		t.Helper()
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range want {
				if !yield(k) {
					return
				}
			}
		}) {
			if got[k] != want[k] {
				t.Errorf("%s = %q, want %q", k, got[k], want[k])
			}
		}
	}
}

// secOutput waits for the probe's output in its CRI log and returns it.
func secOutput(t *testing.T, d *daemon, p *v1.Pod) map[string]string {
	t.Helper()
	path := filepath.Join(d.logs, fmt.Sprintf("default_%s_%s", p.Name, p.UID), "probe", "0.log")
	out := map[string]string{}
	d.poll("the probe's output in "+path, 20*time.Second, func() (bool, string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, err.Error()
		}
		clear(out)
		for _, line := range bytes.Split(b, []byte("\n")) {
			r, err := crilog.Parse(line)
			if err != nil {
				continue
			}
			s := string(r.Content)
			if s == "END" {
				return true, ""
			}
			k, v, _ := strings.Cut(s, "=")
			out[k] = strings.TrimSpace(v)
		}
		return false, fmt.Sprintf("no END yet in %q", b)
	})
	return out
}

// secDeriveUserImage makes image to in the daemon's namespace: image from
// (once podvisor has imported it) with its config's USER set to user.
func secDeriveUserImage(t *testing.T, d *daemon, from, to, user string) {
	t.Helper()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, done, err := cl.WithLease(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer done(context.Background())
	var img containerd.Image
	d.poll("podvisor to import "+from, 30*time.Second, func() (bool, string) {
		img, err = cl.GetImage(ctx, from)
		return err == nil, fmt.Sprint(err)
	})
	cs := cl.ContentStore()
	mf, err := images.Manifest(ctx, cs, img.Target(), platforms.Default())
	if err != nil {
		t.Fatal(err)
	}
	b, err := content.ReadBlob(ctx, cs, mf.Config)
	if err != nil {
		t.Fatal(err)
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Config.User = user
	write := func(mediaType string, v any, labels map[string]string) ocispec.Descriptor {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if err := content.WriteBlob(ctx, cs, desc.Digest.String(), bytes.NewReader(b), desc, content.WithLabels(labels)); err != nil {
			t.Fatal(err)
		}
		return desc
	}
	mf.Config = write(mf.Config.MediaType, cfg, nil)
	// The manifest keeps its config and layers from garbage collection.
	refs := map[string]string{"containerd.io/gc.ref.content.config": mf.Config.Digest.String()}
	for i, l := range mf.Layers {
		refs[fmt.Sprintf("containerd.io/gc.ref.content.l.%d", i)] = l.Digest.String()
	}
	target := write(ocispec.MediaTypeImageManifest, mf, refs)
	if _, err := cl.ImageService().Create(ctx, images.Image{Name: to, Target: target}); err != nil {
		t.Fatal(err)
	}
}

// secSwapAccounted: whether containers on this host can have their swap
// limited (the condition podvisor checks).
func secSwapAccounted() bool {
	if dirExists("/sys/fs/cgroup/memory") {
		_, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
		return err == nil
	}
	// v2: any non-root cgroup with the memory controller shows it.
	matches, _ := filepath.Glob("/sys/fs/cgroup/*/memory.swap.max")
	return len(matches) > 0
}

// secAppArmorLabel checks the probe's process label: containerd's
// default AppArmor profile where AppArmor is enabled, else no AppArmor
// profile (unconfined: no label, or another LSM's, SELinux's on an
// SELinux host).
func secAppArmorLabel(t *testing.T, got map[string]string) {
	t.Helper()
	if secAppArmor() {
		if want := "cri-containerd.apparmor.d (enforce)"; got["apparmor"] != want {
			t.Errorf("apparmor = %q, want %q", got["apparmor"], want)
		}
		return
	}
	if strings.Contains(got["apparmor"], "apparmor") || strings.Contains(got["apparmor"], "(enforce)") || strings.Contains(got["apparmor"], "(complain)") {
		t.Errorf("apparmor = %q on a host without AppArmor, want no AppArmor profile", got["apparmor"])
	}
}

// secAppArmor: whether AppArmor is enabled here as containerd decides it.
func secAppArmor() bool {
	b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	if err != nil || !bytes.HasPrefix(b, []byte("Y")) {
		return false
	}
	_, err = os.Stat("/sys/kernel/security/apparmor")
	return err == nil
}

func secLocalhostRefusal() string {
	if secAppArmor() {
		return "apparmor profile not found podvisor-e2e-missing"
	}
	return "AppArmor is not enabled on this host"
}

// secNegativeOOMScore: whether this host lets root lower an oom_score_adj
// below 0 (nested and rootless hosts do not), tried on this process and
// restored.
func secNegativeOOMScore() bool {
	const p = "/proc/self/oom_score_adj"
	orig, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	if err := os.WriteFile(p, []byte("-1"), 0o644); err != nil {
		return false
	}
	os.WriteFile(p, orig, 0o644)
	return true
}
