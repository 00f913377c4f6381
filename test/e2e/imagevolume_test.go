package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/podvisor/podvisor/test/registry"
	"github.com/podvisor/podvisor/test/testimage"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// TestImageVolume: an image volume (volumes[].image) against a real
// registry (docker-registry on loopback, TLS, htpasswd) and containerd.
// Without credentials the pull is refused: the container that mounts the
// volume waits in ErrImagePull or ImagePullBackOff with the registry's
// 401, its sibling that does not mount it runs. With the pod's
// imagePullSecrets the image is pulled (a Pulled event on the pod) and
// mounted: two containers read its file, a subPath shows a directory of
// it, a write is refused (read-only file system), and both containers
// see one mount. A subPath that is a file of the image waits in
// CreateContainerError, an absent image with pullPolicy Never in
// ErrImageNeverPull, an OCI artifact whose layer title leads out of the
// volume in ErrImagePull naming the title. An OCI artifact (an
// artifactType, an empty config, two layers titled dir/file and file) is
// pulled with the pod's secrets and shown as CRI-O shows one: each layer a
// read-only file at its title, a subPath a directory of them. The
// Kubernetes docs' image volume example (testdata/docs/image-volumes.yaml,
// unmodified: quay.io/crio/artifact:v2, here an artifact of that shape
// made by the test, and a busybox stand-in for debian) shows /volume/dir/file
// and /volume/file as the docs page says. podvisor restarted with image
// garbage collection at 0% adopts the pod untouched and keeps the image,
// while it removes an unused one. With the host's mount gone (a reboot), a restarted
// container gets the image mounted again from the kept snapshot. The pod
// removed, no mount and no snapshot is left.
func TestImageVolume(t *testing.T) {
	requireEnv(t)
	const password = "iv-s3cret-Qk4"
	reg := registry.Start(t, registry.Options{User: "puller", Password: password, TLS: true})
	dir := t.TempDir()
	certs := registryHosts(t, dir, reg.Host, reg)
	d := newDaemon(t, "--registry-config-dir", certs, "--image-credentials-file", filepath.Join(dir, "none.json"))

	const dataRef = "podvisor.test/iv-data:1"
	hello := filepath.Join(dir, "hello.txt")
	inner := filepath.Join(dir, "inner.txt")
	os.WriteFile(hello, []byte("hello from the image\n"), 0o644)
	os.WriteFile(inner, []byte("inner file\n"), 0o644)
	archive := filepath.Join(dir, "iv-data.tar")
	if err := testimage.Build(archive, testimage.Options{Ref: dataRef, Cmd: []string{"echo", "data"},
		ExtraFiles: map[string]string{"/data/hello.txt": hello, "/data/sub/inner.txt": inner}}); err != nil {
		t.Fatal(err)
	}
	pushed(t, d, reg, archive, dataRef, "team/data:1")
	docsLayers := []artifactLayer{{"dir/file", "1\n"}, {"file", "2\n"}}
	pushArtifact(t, d, reg, "team/artifact:1", docsLayers...)
	pushArtifact(t, d, reg, "team/escape:1", artifactLayer{"dir/file", "1\n"}, artifactLayer{"../escape", "x\n"})
	const docsArtifact = "quay.io/crio/artifact:v2"
	makeArtifact(t, d, docsArtifact, docsLayers...)
	t.Cleanup(func() { deleteImage(d, docsArtifact) })
	if err := testimage.Build(filepath.Join(d.images, "debian.tar"), testimage.Options{Ref: "debian", Cmd: []string{"bash"}}); err != nil {
		t.Fatal(err)
	}
	image := reg.Host + "/team/data:1"
	t.Cleanup(func() { deleteImage(d, image) })
	d.start()

	podYAML := func(name, secrets string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
%s  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts:
    - name: data
      mountPath: /vol
    - name: data
      mountPath: /sub
      subPath: data/sub
  - name: peer
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts:
    - name: data
      mountPath: /img
  - name: plain
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
  volumes:
  - name: data
    image:
      reference: %s
`, name, secrets, image)
	}

	// Anonymous: refused with the registry's 401, only for the containers
	// that mount the volume.
	d.writeManifest("anon.yaml", podYAML("anon", ""))
	p := d.waitPod("anon-"+node, 90*time.Second, "main in ErrImagePull or ImagePullBackOff, plain running", func(p *v1.Pod) bool {
		w := containerStatus(p, "main").State.Waiting
		return w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") && containerStatus(p, "plain").State.Running != nil
	})
	if msg := containerStatus(p, "main").State.Waiting.Message; !strings.Contains(msg, "401") && !strings.Contains(msg, "authorization failed") {
		t.Errorf("anonymous pull: waiting message %q, want the registry's 401", msg)
	}
	if w := containerStatus(p, "peer").State.Waiting; w == nil || (w.Reason != "ErrImagePull" && w.Reason != "ImagePullBackOff") {
		t.Errorf("peer: %+v, want it waiting on the image volume's pull", containerStatus(p, "peer").State)
	}
	d.removeManifest("anon.yaml")
	d.waitGone("anon-"+node, 30*time.Second)

	d.writeManifest("secret.yaml", dockerConfigSecret("regcred", reg.Host, "puller", password))
	d.writeManifest("good.yaml", podYAML("good", "  imagePullSecrets:\n  - name: regcred\n"))
	good := d.waitPod("good-"+node, 90*time.Second, "Running", running)
	var pulled bool
	for _, e := range d.podEvents("good-" + node) {
		if e.Reason == "Pulled" && e.InvolvedObject.FieldPath == "" && strings.HasPrefix(e.Message, fmt.Sprintf("Successfully pulled image %q in ", image)) {
			pulled = true
		}
	}
	if !pulled {
		t.Errorf("no Pulled event on the pod for %s: %v", image, d.podEvents("good-"+node))
	}
	execIn := func(ctr string, args ...string) (string, string, int) {
		return d.runCLI("", append([]string{"exec", "good-" + node, "-c", ctr, "--"}, args...)...)
	}
	check := func() {
		t.Helper()
		for _, c := range []struct{ ctr, path, want string }{
			{"main", "/vol/data/hello.txt", "hello from the image"},
			{"main", "/sub/inner.txt", "inner file"},
			{"peer", "/img/data/hello.txt", "hello from the image"},
		} {
			out, errOut, code := execIn(c.ctr, "cat", c.path)
			if code != 0 || strings.TrimSpace(out) != c.want {
				t.Errorf("%s: cat %s: %q %q exit %d, want %q", c.ctr, c.path, out, errOut, code, c.want)
			}
		}
		out, errOut, code := execIn("main", "sh", "-c", "echo x > /vol/data/new")
		if code == 0 || !strings.Contains(out+errOut, "Read-only file system") {
			t.Errorf("write into the image volume: %q %q exit %d, want it refused (read-only)", out, errOut, code)
		}
		if _, _, code := execIn("main", "sh", "-c", "echo x > /sub/new"); code == 0 {
			t.Error("write into the image volume's subPath succeeded")
		}
	}
	check()
	imageMounts := func() []string {
		return slices.DeleteFunc(mountsUnder(d.state), func(m string) bool { return !strings.Contains(m, "/volumes/image/") })
	}
	if ms := imageMounts(); len(ms) != 1 {
		t.Errorf("image mounts %q, want one shared by the pod's containers", ms)
	}
	views := func() []string {
		cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out []string
		err = cl.SnapshotService("overlayfs").Walk(ctx, func(_ context.Context, info snapshots.Info) error {
			if info.Labels["io.podvisor.image-volume.pod-uid"] != "" {
				out = append(out, info.Name)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if v := views(); len(v) != 1 {
		t.Errorf("image volume snapshots %q, want one", v)
	}

	// A subPath that is a file of the image, and an absent image with
	// pullPolicy Never: the containers wait with kubelet's reasons.
	d.writeManifest("refused.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: refused
spec:
  terminationGracePeriodSeconds: 1
  imagePullSecrets:
  - name: regcred
  containers:
  - name: file
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts:
    - name: data
      mountPath: /f
      subPath: data/hello.txt
  - name: never
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts:
    - name: absent
      mountPath: /a
  - name: artifact
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts:
    - name: art
      mountPath: /art
  volumes:
  - name: data
    image:
      reference: %s
  - name: absent
    image:
      reference: podvisor.test/iv-absent:1
      pullPolicy: Never
  - name: art
    image:
      reference: %s/team/escape:1
`, image, reg.Host))
	refused := d.waitPod("refused-"+node, 60*time.Second, "CreateContainerError, ErrImageNeverPull and ErrImagePull", func(p *v1.Pod) bool {
		f, n, a := containerStatus(p, "file").State.Waiting, containerStatus(p, "never").State.Waiting, containerStatus(p, "artifact").State.Waiting
		return f != nil && f.Reason == "CreateContainerError" && n != nil && n.Reason == "ErrImageNeverPull" &&
			a != nil && (a.Reason == "ErrImagePull" || a.Reason == "ImagePullBackOff")
	})
	if msg := containerStatus(refused, "artifact").State.Waiting.Message; !strings.Contains(msg, `"../escape"`) || !strings.Contains(msg, "lead out of the volume") {
		t.Errorf("artifact: waiting message %q, want its title ../escape refused", msg)
	}
	if msg := containerStatus(refused, "file").State.Waiting.Message; !strings.Contains(msg, "not a directory") {
		t.Errorf("file subPath: waiting message %q, want it refused as not a directory", msg)
	}
	if msg := containerStatus(refused, "never").State.Waiting.Message; !strings.Contains(msg, "podvisor.test/iv-absent:1") {
		t.Errorf("Never: waiting message %q, want the image named", msg)
	}
	d.removeManifest("refused.yaml")
	d.waitGone("refused-"+node, 30*time.Second)

	// An OCI artifact, pulled with the pod's secrets: its layers are
	// files at their titles, read-only, a subPath a directory of them.
	d.writeManifest("art.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: art
spec:
  terminationGracePeriodSeconds: 1
  imagePullSecrets:
  - name: regcred
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts:
    - name: art
      mountPath: /art
    - name: art
      mountPath: /sub
      subPath: dir
  volumes:
  - name: art
    image:
      reference: %s/team/artifact:1
`, reg.Host))
	// The Kubernetes docs' example, unmodified, beside it.
	d.writeManifest("image-volumes.yaml", docsManifest(t, "image-volumes.yaml"))
	d.waitPod("image-volume-"+node, 60*time.Second, "Running", running)
	for _, c := range []struct{ path, want string }{{"/volume/dir/file", "1"}, {"/volume/file", "2"}} {
		out, errOut, code := d.runCLI("", "exec", "image-volume-"+node, "-c", "shell", "--", "cat", c.path)
		if code != 0 || strings.TrimSpace(out) != c.want {
			t.Errorf("docs example: cat %s: %q %q exit %d, want %q", c.path, out, errOut, code, c.want)
		}
	}
	d.waitPod("art-"+node, 60*time.Second, "Running", running)
	if v := views(); len(v) != 3 {
		t.Errorf("image volume snapshots %q, want the image's and the two artifacts'", v)
	}
	// The two names are one artifact (one manifest digest): its files
	// are written once, for both pods.
	if files := snapshotsNamed(t, d, "podvisor-artifact/"); len(files) != 1 {
		t.Errorf("artifact files snapshots %q, want one shared by both pods", files)
	}
	d.removeManifest("image-volumes.yaml")
	for _, c := range []struct{ path, want string }{{"/art/dir/file", "1"}, {"/art/file", "2"}, {"/sub/file", "1"}} {
		out, errOut, code := d.runCLI("", "exec", "art-"+node, "-c", "main", "--", "cat", c.path)
		if code != 0 || strings.TrimSpace(out) != c.want {
			t.Errorf("artifact: cat %s: %q %q exit %d, want %q", c.path, out, errOut, code, c.want)
		}
	}
	if out, errOut, code := d.runCLI("", "exec", "art-"+node, "-c", "main", "--", "sh", "-c", "echo x > /art/file"); code == 0 || !strings.Contains(out+errOut, "Read-only file system") {
		t.Errorf("write into the artifact volume: %q %q exit %d, want it refused (read-only)", out, errOut, code)
	}

	d.removeManifest("art.yaml")
	d.waitGone("art-"+node, 30*time.Second)
	// The docs' container (sleep as PID 1) ignores SIGTERM: it goes at
	// the end of its 30 s grace period.
	d.waitGone("image-volume-"+node, 60*time.Second)
	d.poll("the artifacts' views gone with their pods", 30*time.Second, func() (bool, string) {
		v := views()
		return len(v) == 1, fmt.Sprintf("snapshots %q", v)
	})

	// Image GC at 0% after a restart: an unused image goes, the mounted
	// one stays, the pod is adopted as it runs.
	const unused = "podvisor.test/iv-unused:1"
	t.Cleanup(func() { deleteImage(d, unused) })
	unusedArchive := filepath.Join(dir, "iv-unused.tar")
	if err := testimage.Build(unusedArchive, testimage.Options{Ref: unused, Cmd: []string{"echo", "unused"}}); err != nil {
		t.Fatal(err)
	}
	importArchive(t, d, unusedArchive)
	d.stop(syscall.SIGTERM)
	d.extraArgs = append(d.extraArgs, "--image-gc-high-threshold", "0", "--image-gc-low-threshold", "0", "--image-minimum-gc-age", "0s")
	d.start()
	names := func() []string {
		cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		imgs, err := cl.ImageService().List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, i := range imgs {
			out = append(out, i.Name)
		}
		return out
	}
	d.poll("the unused image collected", 60*time.Second, func() (bool, string) {
		n := names()
		return !slices.Contains(n, unused), fmt.Sprintf("images %q", n)
	})
	if n := names(); !slices.Contains(n, image) {
		t.Errorf("the image volume's image %s was collected; left: %q", image, n)
	}
	after := d.waitPod("good-"+node, 30*time.Second, "Running", running)
	for _, c := range []string{"main", "peer"} {
		if containerID(after, c) != containerID(good, c) {
			t.Errorf("%s restarted across podvisor's restart", c)
		}
	}
	check()
	if ms := imageMounts(); len(ms) != 1 {
		t.Errorf("after the restart: image mounts %q, want the one kept", ms)
	}

	// A reboot takes the host's mount away and leaves the snapshot: a
	// container started after it gets the image mounted again.
	d.stop(syscall.SIGTERM)
	for _, m := range imageMounts() {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			t.Fatal(err)
		}
	}
	d.start()
	peer := containerID(after, "peer")
	if err := syscall.Kill(int(d.taskPID(peer)), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.waitPod("good-"+node, 60*time.Second, "peer running again", func(p *v1.Pod) bool {
		return containerID(p, "peer") != peer && containerStatus(p, "peer").State.Running != nil
	})
	if out, errOut, code := execIn("peer", "cat", "/img/data/hello.txt"); code != 0 || strings.TrimSpace(out) != "hello from the image" {
		t.Errorf("peer restarted after the mount was gone: %q %q exit %d", out, errOut, code)
	}
	if ms, v := imageMounts(), views(); len(ms) != 1 || len(v) != 1 {
		t.Errorf("after the remount: mounts %q, snapshots %q, want one of each", ms, v)
	}

	d.removeManifest("good.yaml")
	d.waitGone("good-"+node, 30*time.Second)
	d.poll("the image volume's mount and snapshot gone", 30*time.Second, func() (bool, string) {
		ms, v := imageMounts(), views()
		return len(ms) == 0 && len(v) == 0, fmt.Sprintf("mounts %q, snapshots %q", ms, v)
	})
	// The artifacts' files were held by their views alone: containerd's
	// next collection (a synchronous image removal runs one) takes them.
	deleteImage(d, docsArtifact)
	if left := snapshotsNamed(t, d, "podvisor-artifact"); len(left) > 0 {
		t.Errorf("artifact files snapshots %q left after every pod went", left)
	}
}

// snapshotsNamed lists the snapshots of d's namespace whose names start
// with prefix.
func snapshotsNamed(t *testing.T, d *daemon, prefix string) []string {
	t.Helper()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	err = cl.SnapshotService("overlayfs").Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if strings.HasPrefix(info.Name, prefix) {
			out = append(out, info.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// importArchive imports an image archive into d's namespace.
func importArchive(t *testing.T, d *daemon, archive string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := cl.Import(ctx, f); err != nil {
		t.Fatalf("import %s: %v", archive, err)
	}
}

// artifactLayer is one layer of a test artifact: a blob and its title.
type artifactLayer struct{ title, body string }

// makeArtifact makes an OCI artifact named name in d's containerd
// namespace, shaped as CRI-O's artifacts are (an artifactType, the empty
// config, each layer a file's bytes titled with its path).
func makeArtifact(t *testing.T, d *daemon, name string, layers ...artifactLayer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, done, err := cl.WithLease(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer done(context.WithoutCancel(ctx))
	put := func(mediaType string, b []byte, annotations map[string]string) ocispec.Descriptor {
		desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if err := content.WriteBlob(ctx, cl.ContentStore(), desc.Digest.String(), bytes.NewReader(b), desc); err != nil {
			t.Fatal(err)
		}
		desc.Annotations = annotations
		return desc
	}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: "application/vnd.podvisor.test.artifact.v1",
		Config:       put(ocispec.MediaTypeEmptyJSON, []byte("{}"), nil),
	}
	for _, l := range layers {
		m.Layers = append(m.Layers, put("application/vnd.oci.image.layer.v1.tar", []byte(l.body), map[string]string{ocispec.AnnotationTitle: l.title}))
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	target := put(ocispec.MediaTypeImageManifest, b, nil)
	// The manifest references its config and layers, as a pull leaves it,
	// so that the image keeps them once the lease is gone.
	info := content.Info{Digest: target.Digest, Labels: map[string]string{"containerd.io/gc.ref.content.config": m.Config.Digest.String()}}
	for i, l := range m.Layers {
		info.Labels[fmt.Sprintf("containerd.io/gc.ref.content.l.%d", i)] = l.Digest.String()
	}
	if _, err := cl.ContentStore().Update(ctx, info, "labels"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ImageService().Create(ctx, images.Image{Name: name, Target: target}); err != nil {
		t.Fatal(err)
	}
}

// pushArtifact pushes an artifact of these layers (makeArtifact) to reg as
// repo, through d's containerd namespace, and removes it there again.
func pushArtifact(t *testing.T, d *daemon, reg *registry.Registry, repo string, layers ...artifactLayer) {
	t.Helper()
	const name = "podvisor.test/iv-artifact:1"
	makeArtifact(t, d, name, layers...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := reg.Push(ctx, cl, name, repo); err != nil {
		t.Fatal(err)
	}
	if err := cl.ImageService().Delete(ctx, name, images.SynchronousDelete()); err != nil {
		t.Fatal(err)
	}
}
