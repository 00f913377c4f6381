package doctor

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/podvisor/podvisor/internal/images"
	"github.com/podvisor/podvisor/internal/trust"
	"github.com/podvisor/podvisor/manifest"
)

// checkManifests reads the manifests directory as the daemon does
// (package manifest: its parser, its permission rule, honouring
// --allow-insecure-manifests): every file refused or insecure is a
// finding, and so is a file holding a Secret that others can read. The snapshot is for the images check.
func checkManifests(o Options) (manifest.Snapshot, []Finding) {
	const check = "manifests"
	if _, err := os.Stat(o.Manifests); err != nil {
		return manifest.Snapshot{}, []Finding{warn(check, "mkdir -p "+o.Manifests+" and put the Pod manifests there (or give --manifests)",
			"manifests directory: %v", err)}
	}
	snap := manifest.LoadOptions(o.Manifests, o.NodeName, o.Parse)
	var out []Finding
	for _, e := range snap.Errors {
		fix := "correct the file (podvisor validate " + e.Path + " says the same)"
		if errors.Is(e, manifest.ErrInsecure) {
			fix = "chown root and chmod go-w the path (or run with --allow-insecure-manifests)"
		}
		out = append(out, fail(check, fix, "%s", e.Error()))
	}
	for _, w := range snap.Warnings {
		switch {
		case errors.Is(w, manifest.ErrInsecure):
			out = append(out, warn(check, "chown root and chmod go-w the path: --allow-insecure-manifests lets anyone who can write it run pods as root", "%s", w.Error()))
		case errors.Is(w, manifest.ErrSecretReadable):
			mode := "600"
			if fi, err := os.Stat(w.Path); err == nil {
				mode = manifest.SecretFileMode(fi.Mode().Perm())
			}
			out = append(out, warn(check, "chmod "+mode+" "+w.Path+" (the Secret's values are readable by whoever can read the file)", "%s", w.Error()))
		}
	}
	if len(out) == 0 {
		out = append(out, ok(check, "%s: %d pods, owned by root and not writable by others", o.Manifests, len(snap.Pods)))
	}
	return snap, out
}

// checkImages looks for every image the manifests name in containerd's
// namespace, else in an archive of the images directory (imported at
// start). podvisor would pull one found in neither: that needs the
// registry, which a box nobody reaches may not have.
func checkImages(ctx context.Context, o Options, snap manifest.Snapshot, c *containerdConn) []Finding {
	const check = "images"
	var names []string
	for _, p := range snap.Pods {
		for _, ct := range slices.Concat(p.Pod.Spec.InitContainers, p.Pod.Spec.Containers) {
			if n, err := images.Normalize(ct.Image); err == nil && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	archived, aerr := archiveImages(o.ImagesDir, o.Parse.AllowInsecure)
	var out []Finding
	found := 0
	for _, n := range names {
		if archived[n] != "" {
			found++
			continue
		}
		where := "containerd is unreachable"
		if c.client != nil {
			cctx, cancel := context.WithTimeout(ctx, o.Timeout)
			_, err := c.client.ImageService().Get(cctx, n) // in the client's namespace
			cancel()
			if err == nil {
				found++
				continue
			}
			where = "not in containerd namespace " + o.ContainerdNamespace
			if !errdefs.IsNotFound(err) {
				where = fmt.Sprintf("containerd namespace %s: %v", o.ContainerdNamespace, err)
			}
		}
		if aerr != nil {
			where += "; " + aerr.Error()
		}
		out = append(out, fail(check, fmt.Sprintf("put its archive (ctr image export, docker save) in %s, or pull it: ctr -n %s images pull %s", o.ImagesDir, o.ContainerdNamespace, n),
			"image %s: %s, nor in an archive of %s (podvisor would have to pull it)", n, where, o.ImagesDir))
	}
	if len(out) == 0 {
		out = append(out, ok(check, "the %d images of the manifests are in containerd or %s", found, o.ImagesDir))
	}
	return out
}

// archiveImages names the images of the archives in dir (trusted ones,
// unless allowInsecure, as the daemon imports them) by archive.
func archiveImages(dir string, allowInsecure bool) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("images directory: %w", err)
	}
	if !allowInsecure {
		if ps := trust.Dir(dir, 0, nil); len(ps) > 0 {
			return nil, fmt.Errorf("images directory not used: %s", ps[0])
		}
	}
	out := map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".tar") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		refs, err := archiveRefs(p)
		if err != nil {
			continue
		}
		name := images.RefTranslator(p)
		for _, r := range refs {
			if n := name(r); n != "" {
				out[n] = p
			}
		}
	}
	return out, nil
}

// archiveRefs are the names an image archive gives its images: an OCI
// layout's index.json ref.name annotations, a docker save's RepoTags.
func archiveRefs(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var refs []string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return refs, nil
		}
		if err != nil {
			return nil, err
		}
		switch strings.TrimPrefix(h.Name, "./") {
		case "index.json":
			var idx struct {
				Manifests []struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"manifests"`
			}
			if json.NewDecoder(tr).Decode(&idx) == nil {
				for _, m := range idx.Manifests {
					for _, k := range []string{"io.containerd.image.name", "org.opencontainers.image.ref.name"} {
						if r := m.Annotations[k]; r != "" {
							refs = append(refs, r)
						}
					}
				}
			}
		case "manifest.json":
			var ms []struct{ RepoTags []string }
			if json.NewDecoder(tr).Decode(&ms) == nil {
				for _, m := range ms {
					refs = append(refs, m.RepoTags...)
				}
			}
		}
	}
}
