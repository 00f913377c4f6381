package manifest

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/podvisor/podvisor/internal/atomicfile"
	v1 "k8s.io/api/core/v1"
)

// SecretsFile returns where a Source with RunDir runDir keeps the content
// of the last good Secrets: <runDir>/manifests/secrets.json, mode 0600.
// The run directory is a tmpfs (/run/podvisor), so a Secret's values
// never reach a disk and are gone at reboot; state.json, on disk, only
// names each Secret and its keys, with a digest that finds its content
// here.
func SecretsFile(runDir string) string {
	return filepath.Join(runDir, "manifests", "secrets.json")
}

// secretsVersion is the format of the secrets file; another is ignored.
const secretsVersion = 1

// persistedSecrets is the secrets file.
type persistedSecrets struct {
	Version int `json:"version"`
	// Key keys the digests of state.json. It lives here, on tmpfs, so
	// that a digest on disk tells nothing of a short value.
	Key []byte `json:"key"`
	// Secrets maps a digest to the Secret it is the digest of.
	Secrets map[string]*v1.Secret `json:"secrets,omitempty"`
}

// secretStore keeps the last good Secrets' content apart from the state
// file: in the secrets file when the Source has a run directory, else in
// memory only (a restart then forgets the Secrets whose manifests are
// broken).
type secretStore struct {
	path     string // "" when there is no run directory
	key      []byte
	byDigest map[string]*v1.Secret // read at start
	digests  map[*v1.Secret]string // computed, by the Secret handed out
	last     []byte                // the file's content last written or read
	logged   string                // the last error logged, until a write succeeds
}

// loadSecrets reads the secrets file, or starts with a new key.
func (s *scanner) loadSecrets() {
	st := &s.secrets
	st.digests = map[*v1.Secret]string{}
	if st.path != "" {
		data, err := os.ReadFile(st.path)
		var ps persistedSecrets
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			s.log.Warn("cannot read the last good Secrets", "file", st.path, "error", err)
		case json.Unmarshal(data, &ps) != nil || ps.Version != secretsVersion || len(ps.Key) < 16:
			s.log.Warn("corrupt last good Secrets; starting without them", "file", st.path)
		default:
			st.key, st.byDigest, st.last = ps.Key, ps.Secrets, data
		}
	}
	if st.key == nil {
		st.key = make([]byte, 32)
		rand.Read(st.key) // never fails (crypto/rand)
	}
}

// digest is the Secret's digest, keyed by the store's key.
func (st *secretStore) digest(secret *v1.Secret) string {
	if d, ok := st.digests[secret]; ok {
		return d
	}
	b, err := json.Marshal(secret)
	if err != nil {
		b = []byte(err.Error())
	}
	m := hmac.New(sha256.New, st.key)
	m.Write(b)
	d := hex.EncodeToString(m.Sum(nil))
	st.digests[secret] = d
	return d
}

// ref is what the state file says of a Secret.
func (st *secretStore) ref(secret *v1.Secret) persistedSecretRef {
	return persistedSecretRef{
		Namespace: secret.Namespace,
		Name:      secret.Name,
		Type:      secret.Type,
		Keys:      slices.Sorted(maps.Keys(secret.Data)),
		Digest:    st.digest(secret),
	}
}

// get returns the Secret ref names from the secrets file, or nil when it
// is not there (or not the same Secret).
func (st *secretStore) get(ref persistedSecretRef) *v1.Secret {
	secret := st.byDigest[ref.Digest]
	if secret == nil || secret.Namespace != ref.Namespace || secret.Name != ref.Name {
		return nil
	}
	delete(st.digests, secret)
	if !hmac.Equal([]byte(st.digest(secret)), []byte(ref.Digest)) {
		return nil
	}
	return secret
}

// write saves secrets (by digest) when they changed. The digests of
// Secrets no longer kept are forgotten.
func (st *secretStore) write(secrets map[string]*v1.Secret) error {
	for sec, d := range st.digests {
		if secrets[d] != sec {
			delete(st.digests, sec)
		}
	}
	st.byDigest = nil // read once, at start
	if st.path == "" {
		return nil
	}
	data, err := json.Marshal(persistedSecrets{Version: secretsVersion, Key: st.key, Secrets: secrets})
	if err == nil {
		err = writeIfChanged(st.path, data, &st.last)
	}
	if err == nil {
		st.logged = ""
	}
	return err
}

// writeIfChanged writes data to path atomically, mode 0600, unless it is
// what was last written there (*last), which it then becomes: at rest
// nothing is written.
func writeIfChanged(path string, data []byte, last *[]byte) error {
	if bytes.Equal(data, *last) {
		return nil
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return err
	}
	*last = data
	return nil
}
