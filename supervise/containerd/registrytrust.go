package containerd

import (
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/podvisor/podvisor/internal/trust"
)

// maxCredentialsFile bounds the docker config.json read at each pull.
const maxCredentialsFile = 4 << 20

// trustedUID is the user trusted besides root to own the files that
// configure registries: the one podvisor runs as, as the daemon's own
// start-up check has it.
func trustedUID() int { return os.Geteuid() }

// trustWarnings tells each file's problems once while they last: the
// files are read at every pull, and a pull may read them several times.
// A file found sound again is forgotten, so a problem that comes back is
// told again.
type trustWarnings struct {
	log  *slog.Logger
	mu   sync.Mutex
	told map[string]string // by path: the warning last told
}

// newTrustWarnings tells to log; nil discards.
func newTrustWarnings(log *slog.Logger) *trustWarnings {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &trustWarnings{log: log}
}

// tell logs the problems of the file at path (what says what it is), or
// forgets it when there are none.
func (w *trustWarnings) tell(what, path string, problems []trust.Problem) {
	msg := ""
	if len(problems) > 0 {
		msg = what + " " + (&trust.UntrustedError{Path: path, Problems: problems}).Error()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.told == nil {
		w.told = map[string]string{}
	}
	if w.told[path] == msg {
		return
	}
	if msg == "" {
		delete(w.told, path)
		return
	}
	w.told[path] = msg
	// The same words as the daemon's check at start (WarnUntrustedAuthFiles).
	w.log.Warn("a file that configures credentials or registries can be changed by users other than root", "problem", msg)
}

// readCredentialsFile reads the docker config.json at path from a
// descriptor checked with internal/trust, the path walked by descriptor
// and each symlink hop checked, so the warning is about the bytes used.
// A file others could change is used all the same, with a warning, as
// the daemon warns of it at start: refusing it would stop every pull
// that needs it, and the credentials it holds only open registries,
// they do not choose what runs.
func readCredentialsFile(path string, warn *trustWarnings) ([]byte, error) {
	data, problems, err := trust.ReadFile(path, trustedUID(), maxCredentialsFile)
	if err != nil {
		return nil, err
	}
	warn.tell("registry credentials", path, problems)
	return data, nil
}

// checkedHostDir is config.HostDirFromRoot(root) that, each time a pull
// looks a host's directory up, checks that directory and its hosts.toml
// on descriptors (internal/trust) and warns of what others could change.
// containerd's config.ConfigureHosts then reads hosts.toml (and the
// certificates it names) by path: it takes no content. That read is not
// the checked descriptor, but each directory on the way was checked, so
// whoever could swap the file or a link on the way between the two is
// already warned of.
func checkedHostDir(root string, warn *trustWarnings) func(host string) (string, error) {
	hostDir := config.HostDirFromRoot(root)
	return func(host string) (string, error) {
		dir, err := hostDir(host)
		if err != nil || dir == "" {
			return dir, err
		}
		ps, err := trust.CheckDir(dir, trustedUID())
		if err != nil {
			warn.log.Warn("cannot check a hosts.toml directory", "dir", dir, "err", err)
		}
		hosts := filepath.Join(dir, "hosts.toml")
		fps, err := trust.CheckFile(hosts, trustedUID())
		if err != nil {
			warn.log.Warn("cannot check hosts.toml", "file", hosts, "err", err)
		}
		warn.tell("hosts.toml", hosts, dedupe(append(ps, fps...)))
		return dir, nil
	}
}

// dedupe drops repeated problems, keeping the first of each: the
// directory's walk and its file's share their parents.
func dedupe(ps []trust.Problem) []trust.Problem {
	seen := map[string]bool{}
	out := ps[:0]
	for _, p := range ps {
		if k := p.String(); !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}
