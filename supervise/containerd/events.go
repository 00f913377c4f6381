package containerd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apievents "github.com/containerd/containerd/api/events"
	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/typeurl/v2"
	"github.com/distribution/reference"
	"github.com/podvisor/podvisor/supervise"
)

// Events follows containerd's task exit and OOM events of the namespace.
// Exits of exec processes are not passed on. When the stream breaks, errs
// yields the reason and events is closed.
func (r *Runtime) Events(ctx context.Context) (<-chan supervise.RuntimeEvent, <-chan error) {
	filters := []string{
		fmt.Sprintf(`namespace==%q,topic=="/tasks/exit"`, r.opts.Namespace),
		fmt.Sprintf(`namespace==%q,topic=="/tasks/oom"`, r.opts.Namespace),
	}
	ch, errs := r.client.Subscribe(ctx, filters...)
	out := make(chan supervise.RuntimeEvent, 16)
	outErr := make(chan error, 1)
	go func() {
		defer close(out)
		for {
			select {
			case env, ok := <-ch:
				if !ok {
					outErr <- errStream
					return
				}
				if ev, ok := decode(env.Event); ok {
					select {
					case out <- ev:
					case <-ctx.Done():
						outErr <- ctx.Err()
						return
					}
				}
			case err := <-errs:
				if err == nil {
					err = errStream
				}
				outErr <- err
				return
			case <-ctx.Done():
				outErr <- ctx.Err()
				return
			}
		}
	}()
	return out, outErr
}

func decode(any typeurl.Any) (supervise.RuntimeEvent, bool) {
	if any == nil {
		return supervise.RuntimeEvent{}, false
	}
	ev, err := typeurl.UnmarshalAny(any)
	if err != nil {
		return supervise.RuntimeEvent{}, false
	}
	switch e := ev.(type) {
	case *apievents.TaskExit:
		if e.ID != e.ContainerID {
			return supervise.RuntimeEvent{}, false // an exec process, not the container's init
		}
		return supervise.RuntimeEvent{Type: supervise.EventExit, ContainerID: e.ContainerID}, true
	case *apievents.TaskOOM:
		return supervise.RuntimeEvent{Type: supervise.EventOOM, ContainerID: e.ContainerID}, true
	}
	return supervise.RuntimeEvent{}, false
}

// Import imports one OCI-layout or docker-save archive, names its images as
// docker does, and unpacks them for the snapshotter.
func (r *Runtime) Import(ctx context.Context, path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	imgs, err := r.client.Import(ctx, f,
		client.WithImageRefTranslator(archiveRefTranslator(path)),
		client.WithSkipDigestRef(func(string) bool { return true }),
	)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	var names []string
	for _, i := range imgs {
		img := client.NewImage(r.client, i)
		if err := img.Unpack(ctx, r.opts.Snapshotter); err != nil {
			return names, fmt.Errorf("unpack %s: %w", i.Name, err)
		}
		r.markUnpacked(img.Target().Digest.String(), true)
		names = append(names, i.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("archive names no image (no io.containerd.image.name or org.opencontainers.image.ref.name annotation, no RepoTags)")
	}
	return names, nil
}

// archiveRefTranslator names an image of an OCI archive from its
// org.opencontainers.image.ref.name as docker does: "busybox" and
// "busybox:latest" become "docker.io/library/busybox:latest". A bare tag
// (the OCI convention: "latest" or a version such as "1.36") is a tag of the repository named after
// the archive file ("busybox.tar" → docker.io/library/busybox:1.36).
func archiveRefTranslator(path string) func(string) string {
	repo := strings.TrimSuffix(filepath.Base(path), ".tar")
	return func(ref string) string {
		if looksLikeTag(ref) && repo != "" {
			if _, err := reference.ParseDockerRef(repo); err == nil {
				ref = repo + ":" + ref
			}
		}
		named, err := reference.ParseDockerRef(ref)
		if err != nil {
			return ""
		}
		return named.String()
	}
}

// looksLikeTag tells a bare OCI ref.name tag ("latest", "v1.2", "3.5.9")
// from a bare repository name ("busybox").
func looksLikeTag(ref string) bool {
	if ref == "" || strings.ContainsAny(ref, "/:@") {
		return false
	}
	if ref == "latest" {
		return true
	}
	c := ref[0]
	return c >= '0' && c <= '9' || (c == 'v' && len(ref) > 1 && ref[1] >= '0' && ref[1] <= '9')
}
