package supervise

import (
	"context"
	"errors"
	"fmt"
	"github.com/podvisor/podvisor/internal/inotify"
	"os"
	"path/filepath"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/distribution/reference"
	"golang.org/x/sys/unix"
)

// importedFile identifies a version of an archive already imported.
type importedFile struct {
	size  int64
	mtime time.Time
}

// watchImages imports every *.tar in the images dir at start (pods wait for
// this first pass), then again whenever an archive has been completely
// written (closed after writing, or renamed in). A failed import is
// retried on the next pass and reported each time it fails.
func (s *Supervisor) watchImages(ctx context.Context) {
	dir := s.cfg.ImagesDir
	done := map[string]importedFile{}
	var failed bool
	pass := func() {
		n, err := s.importDir(ctx, dir, done)
		failed = err != nil
		if err != nil && ctx.Err() == nil {
			s.log.Error("import images", "dir", dir, "err", err)
		}
		if n > 0 {
			s.imageGen.Add(1)
			s.wakeAll()
		}
	}
	pass()
	close(s.imagesReady)
	if dir == "" {
		return
	}
	changed := make(chan struct{}, 1)
	go watchCloseWrite(ctx, dir, changed, s.log.Warn)
	retry := time.NewTicker(30 * time.Second)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			pass()
		case <-retry.C:
			if failed {
				pass()
			}
		}
	}
}

// importDir imports the archives in dir that changed since the last pass.
// It returns how many were imported.
func (s *Supervisor) importDir(ctx context.Context, dir string, done map[string]importedFile) (int, error) {
	if dir == "" {
		return 0, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read images dir: %w", err)
	}
	var errs []error
	n := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".tar") || strings.HasPrefix(name, ".") {
			continue
		}
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		key := importedFile{size: fi.Size(), mtime: fi.ModTime()}
		if done[p] == key {
			continue
		}
		names, err := s.importArchive(ctx, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		done[p] = key
		n++
		s.log.Info("imported image archive", "file", p, "images", names)
	}
	return n, errors.Join(errs...)
}

// importArchive imports one OCI-layout or docker-save archive, names its
// images as docker does, and unpacks them for the snapshotter.
func (s *Supervisor) importArchive(ctx context.Context, path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	imgs, err := s.client.Import(ctx, f,
		containerd.WithImageRefTranslator(archiveRefTranslator(path)),
		containerd.WithSkipDigestRef(func(string) bool { return true }),
	)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	var names []string
	for _, i := range imgs {
		img := containerd.NewImage(s.client, i)
		if err := img.Unpack(ctx, s.cfg.Snapshotter); err != nil {
			return names, fmt.Errorf("unpack %s: %w", i.Name, err)
		}
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

// watchCloseWrite signals changed whenever a file in dir is closed after
// writing or renamed into it (inotify IN_CLOSE_WRITE / IN_MOVED_TO), so a
// half-written archive is never imported. fsnotify does not expose
// close-write, hence raw inotify. A dir that does not exist yet is polled
// for.
func watchCloseWrite(ctx context.Context, dir string, changed chan<- struct{}, warn func(string, ...any)) {
	for ctx.Err() == nil {
		if err := watchOnce(ctx, dir, changed); err != nil && ctx.Err() == nil {
			warn("watch images dir", "dir", dir, "err", err)
		}
		t := time.NewTimer(2 * time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func watchOnce(ctx context.Context, dir string, changed chan<- struct{}) error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("inotify: %w", err)
	}
	f := os.NewFile(uintptr(fd), "inotify")
	defer f.Close()
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF); err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	// The directory may have gained archives before the watch existed.
	notify(changed)
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, 64*1024)
	for {
		n, err := f.Read(buf)
		if err != nil {
			return err
		}
		gone := false
		inotify.Each(buf, n, func(_ int, mask uint32, _ string) {
			if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0 {
				gone = true
			}
		})
		if gone {
			return nil // the directory went: watch it again when it is back
		}
		notify(changed)
	}
}

func notify(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
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
