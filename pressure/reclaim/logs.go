package reclaim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/podvisor/podvisor/internal/crilog"
)

// podLogDir matches kubelet's "<namespace>_<name>_<uid>": a namespace is
// a DNS label, a name a DNS subdomain, neither has "_"; a UID here is
// letters, digits and dashes.
var podLogDir = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?_[a-z0-9]([-.a-z0-9]*[a-z0-9])?_([a-zA-Z0-9][-a-zA-Z0-9]*)$`)

// containerLog matches a run's live log file, "<restartCount>.log".
var containerLog = regexp.MustCompile(`^[0-9]+\.log$`)

// SweepLogs removes, under LogDir, the directories of pods that no longer
// exist (no pod of the snapshot, no record, no container names their
// UID), and every container log's rotations beyond LogMaxFiles. Only
// real directories and files with podvisor's names are touched; symlinks
// are neither followed nor removed.
func (r *Reclaimer) SweepLogs(ctx context.Context) error {
	if r.o.LogDir == "" {
		return nil
	}
	ents, err := os.ReadDir(r.o.LogDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sweep logs: %w", err)
	}
	// What exists is read after the directories were listed: a pod whose
	// directory is made later is not a candidate, and one listed is
	// either known here or gone.
	live, err := r.livePods(ctx)
	if err != nil {
		return fmt.Errorf("sweep logs: %w", err)
	}
	var errs []error
	for _, e := range ents {
		m := podLogDir.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() { // DirEntry: a symlink is no dir
			continue
		}
		dir := filepath.Join(r.o.LogDir, e.Name())
		if uid := m[3]; !live[uid] {
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, err)
				continue
			}
			r.o.Log.Info("removed the log directory of a pod that no longer exists", "dir", dir)
			continue
		}
		errs = append(errs, r.trimPod(dir))
	}
	return errors.Join(errs...)
}

// trimPod trims every container log of one pod's directory.
func (r *Reclaimer) trimPod(dir string) error {
	ctrs, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range ctrs {
		if !c.IsDir() {
			continue
		}
		cdir := filepath.Join(dir, c.Name())
		files, err := os.ReadDir(cdir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range files {
			if !containerLog.MatchString(f.Name()) {
				continue
			}
			done, err := crilog.Trim(filepath.Join(cdir, f.Name()), r.o.LogMaxFiles)
			errs = append(errs, err)
			if len(done) > 0 {
				r.o.Log.Info("removed rotated logs beyond --container-log-max-files", "files", strings.Join(done, ","))
			}
		}
	}
	return errors.Join(errs...)
}

// livePods is the UIDs of the pods that exist: in the snapshot, with a
// record, or with a container.
func (r *Reclaimer) livePods(ctx context.Context) (map[string]bool, error) {
	live := map[string]bool{}
	if r.o.RecordsDir != "" {
		recs, err := os.ReadDir(r.o.RecordsDir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, e := range recs {
			live[e.Name()] = true
		}
	}
	if r.o.Runtime != nil {
		ctrs, err := r.o.Runtime.Containers(ctx)
		if err != nil {
			return nil, err
		}
		for _, c := range ctrs {
			if c.PodUID != "" {
				live[c.PodUID] = true
			}
		}
	}
	r.mu.Lock()
	for uid := range r.podUIDs {
		live[uid] = true
	}
	r.mu.Unlock()
	return live, nil
}
