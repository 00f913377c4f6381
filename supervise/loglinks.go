package supervise

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// maxLinkName is ext4's longest file name; kubelet cuts a link's name to
// it.
const maxLinkName = 255

// LogLinkName is kubelet's name of a container's link in
// /var/log/containers: "<pod>_<namespace>_<container>-<containerID>.log",
// cut to 255 bytes.
func LogLinkName(pod, namespace, container, id string) string {
	const suffix = ".log"
	name := fmt.Sprintf("%s_%s_%s-%s", pod, namespace, container, id)
	if len(name) > maxLinkName-len(suffix) {
		name = name[:maxLinkName-len(suffix)]
	}
	return name + suffix
}

// linkLog makes the container's /var/log/containers link to its run's
// live log file, as kubelet does once the container is created. A failure
// is logged: the link is for log shippers, the container runs without it.
func (w *podWorker) linkLog(pod *v1.Pod, container, id, logPath string) {
	dir := w.d.logLinks
	if dir == "" {
		return
	}
	link := filepath.Join(dir, LogLinkName(pod.Name, pod.Namespace, container, id))
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		if err = os.Symlink(logPath, link); errors.Is(err, fs.ErrExist) {
			// Left by a podvisor that died between link and record.
			os.Remove(link)
			err = os.Symlink(logPath, link)
		}
	}
	if err != nil {
		w.log.Warn("link container log", "container", container, "err", err)
	}
}

// unlinkLog removes the container's link, once the container is removed.
func (w *podWorker) unlinkLog(container, id string) {
	dir := w.d.logLinks
	if dir == "" {
		return
	}
	namespace, name, _ := strings.Cut(w.fullName, "/")
	link := filepath.Join(dir, LogLinkName(name, namespace, container, id))
	if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
		w.log.Warn("unlink container log", "container", container, "err", err)
	}
}

// logLink is one link in the links directory that points into podvisor's
// log dir.
type logLink struct {
	path   string
	target string
	id     string // the container ID from the name; "" if cut
}

// ownLogLinks lists the links in dir that point below logDir: others in a
// shared /var/log/containers (kubelet's, another podvisor's) are not
// podvisor's to remove.
func ownLogLinks(dir, logDir string) ([]logLink, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	prefix := filepath.Clean(logDir) + string(filepath.Separator)
	var out []logLink
	for _, e := range ents {
		if e.Type()&fs.ModeSymlink == 0 || !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		target, err := os.Readlink(p)
		if err != nil || !strings.HasPrefix(target, prefix) {
			continue
		}
		l := logLink{path: p, target: target}
		stem := strings.TrimSuffix(e.Name(), ".log")
		if i := strings.LastIndexByte(stem, '-'); i >= 0 && isContainerID(stem[i+1:]) {
			l.id = stem[i+1:]
		}
		out = append(out, l)
	}
	return out, nil
}

func isContainerID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// unlinkPodLogs removes the links into a pod's log dir, when the pod is
// cleaned up: a container removed with the pod, not one by one, has one
// too.
func (d *workerDeps) unlinkPodLogs(podLogs string) error {
	if d.logLinks == "" {
		return nil
	}
	links, err := ownLogLinks(d.logLinks, podLogs)
	if err != nil {
		return fmt.Errorf("list log links: %w", err)
	}
	var errs []error
	for _, l := range links {
		if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// pruneLogLinks removes the links of containers podvisor no longer has:
// left by a podvisor stopped before it removed them. The links are read
// before the containers are listed, so a link made meanwhile, of a
// container created before it, is never taken for stale. A container with
// no link (made by a podvisor without links, or before they were turned
// on) gets its own.
func (s *Supervisor) pruneLogLinks(ctx context.Context) error {
	if s.opts.LogLinks == "" {
		return nil
	}
	links, err := ownLogLinks(s.opts.LogLinks, s.layout.LogDir)
	if err != nil {
		return err
	}
	all, err := s.rt.List(ctx)
	if err != nil {
		return err
	}
	linked := map[string]bool{}
	for _, l := range links {
		linked[l.id] = true
	}
	have := map[string]bool{}
	var errs []error
	for _, c := range all {
		have[c.ID] = true
		if !linked[c.ID] {
			errs = append(errs, s.linkListed(c))
		}
	}
	for _, l := range links {
		stale := l.id != "" && !have[l.id]
		if l.id == "" {
			// A name cut to 255 bytes: stale once its log is gone.
			_, err := os.Stat(l.target)
			stale = errors.Is(err, fs.ErrNotExist)
		}
		if stale {
			if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// linkListed makes the link of a container found in the runtime, from its
// labels, if its log is there. One made meanwhile by its worker is no
// error.
func (s *Supervisor) linkListed(c ContainerInfo) error {
	l := c.Labels
	n, err := strconv.Atoi(l[LabelRestartCount])
	if err != nil || l[LabelContainer] == "" || l[LabelPodName] == "" || l[LabelPodUID] == "" {
		return nil
	}
	logPath := s.layout.ContainerLog(l[LabelPodNamespace], l[LabelPodName], l[LabelPodUID], l[LabelContainer], int32(n))
	if _, err := os.Stat(logPath); err != nil {
		return nil
	}
	if err := os.MkdirAll(s.opts.LogLinks, 0o755); err != nil {
		return err
	}
	link := filepath.Join(s.opts.LogLinks, LogLinkName(l[LabelPodName], l[LabelPodNamespace], l[LabelContainer], c.ID))
	if err := os.Symlink(logPath, link); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// pruneLogLinksLoop prunes (and makes missing links) at start and once
// for each ask on wanted (a pod's worker ended: its pod was removed), asks
// made during a pass merging into one more pass, until ctx ends. Never on
// a timer: stale links are what a podvisor stopped before it removed them
// left, and a container podvisor created gets its link from its worker.
func (s *Supervisor) pruneLogLinksLoop(ctx context.Context, wanted <-chan struct{}) {
	if s.opts.LogLinks == "" {
		return
	}
	for {
		if err := s.pruneLogLinks(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("prune container log links", "err", err)
		}
		s.log.Debug("log links pruned")
		select {
		case <-ctx.Done():
			return
		case <-wanted:
		}
	}
}
