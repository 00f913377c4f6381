package containerd

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/distribution/reference"
	v1 "k8s.io/api/core/v1"
)

// NodeCredentials returns the Credentials of a docker config.json: the
// first of files that exists, read at each pull (so an edit applies to
// the next pull) from a descriptor checked with internal/trust; one that
// users other than root (or the user podvisor runs as) could change is
// warned of, once while it lasts, naming the file, why and the fix. Its
// "auths" keys match as kubelet's keyring matches them: by registry host
// (each dot-separated part may be a glob, the port must be equal) and
// path prefix; every matching key's credential is returned, the most
// specific first (kubelet's reverse order of keys).
func NodeCredentials(log *slog.Logger, files ...string) Credentials {
	warn := newTrustWarnings(log)
	return func(ctx context.Context, image, host string) ([]Credential, error) {
		for _, f := range files {
			data, err := readCredentialsFile(f, warn)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("credentials: %w", err)
			}
			var cfg dockerConfig
			if err := json.Unmarshal(data, &cfg); err != nil {
				return nil, fmt.Errorf("credentials: %s: %w", f, err)
			}
			creds, err := keyring{auths: cfg.Auths}.lookup(image, host)
			if err != nil {
				return nil, fmt.Errorf("credentials: %s: %w", f, err)
			}
			return creds, nil
		}
		return nil, nil
	}
}

// PullSecretCredentials returns the Credentials of a pod's
// imagePullSecrets (Secrets of type kubernetes.io/dockerconfigjson or
// kubernetes.io/dockercfg; others are skipped, as kubelet's
// MakeDockerKeyring skips them), all matching keys of all of them in
// kubelet's order: the most specific key first, Secrets in the pod's
// order for one key. An error names the Secret and its key, never a value.
func PullSecretCredentials(secrets []*v1.Secret) (Credentials, error) {
	var rings []keyring
	for _, s := range secrets {
		var auths map[string]dockerAuth
		switch s.Type {
		case v1.SecretTypeDockerConfigJson:
			var cfg dockerConfig
			if err := json.Unmarshal(s.Data[v1.DockerConfigJsonKey], &cfg); err != nil {
				return nil, fmt.Errorf("imagePullSecret %q: %s is not a docker config.json", s.Name, v1.DockerConfigJsonKey)
			}
			auths = cfg.Auths
		case v1.SecretTypeDockercfg:
			if err := json.Unmarshal(s.Data[v1.DockerConfigKey], &auths); err != nil {
				return nil, fmt.Errorf("imagePullSecret %q: %s is not a docker config", s.Name, v1.DockerConfigKey)
			}
		default:
			continue
		}
		rings = append(rings, keyring{auths: auths, name: s.Name})
	}
	if len(rings) == 0 {
		return nil, nil
	}
	return func(ctx context.Context, image, host string) ([]Credential, error) {
		var all []keyedCredential
		for _, k := range rings {
			m, err := k.matches(image, host)
			if err != nil {
				return nil, fmt.Errorf("imagePullSecret %q: %w", k.name, err)
			}
			all = append(all, m...)
		}
		return ordered(all), nil
	}, nil
}

// Chain returns Credentials that return every credential of each of cs,
// in order (a pod's imagePullSecrets before the node's, as kubelet's
// union keyring). Nil entries are skipped.
func Chain(cs ...Credentials) Credentials {
	return func(ctx context.Context, image, host string) ([]Credential, error) {
		var out []Credential
		for _, c := range cs {
			if c == nil {
				continue
			}
			creds, err := c(ctx, image, host)
			if err != nil {
				return nil, err
			}
			out = append(out, creds...)
		}
		return out, nil
	}
}

// dockerConfig is the part of a docker config.json podvisor reads.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Auth          string `json:"auth"` // base64 of user:password
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
}

// keyring is one config's auths.
type keyring struct {
	auths map[string]dockerAuth
	name  string // the Secret's, for errors
}

type keyedCredential struct {
	key string // normalized
	Credential
}

// lookup finds the credentials of image pulled from host (the registry or
// a mirror of it), most specific key first.
func (k keyring) lookup(image, host string) ([]Credential, error) {
	m, err := k.matches(image, host)
	if err != nil {
		return nil, err
	}
	return ordered(m), nil
}

// matches returns the credential of every key matching the image's
// repository path on host, or on the image's own registry when host is a
// mirror of it: kubelet looks credentials up by the image's name, and
// containerd's CRI sends them to whichever host serves the pull, a mirror
// included, so a pull secret keyed by the registry a manifest names keeps
// working behind a mirror configured in --registry-config-dir.
func (k keyring) matches(image, host string) ([]keyedCredential, error) {
	targets := []string{normalizeRegistry(host)}
	if named, err := reference.ParseNormalizedNamed(image); err == nil {
		p := "/" + reference.Path(named)
		if reg := normalizeRegistry(reference.Domain(named)); reg != targets[0] {
			targets = append(targets, reg+p)
		}
		targets[0] += p
	}
	keys := make([]string, 0, len(k.auths))
	for key := range k.auths {
		keys = append(keys, key)
	}
	sort.Strings(keys) // a stable order for keys normalizing alike
	var out []keyedCredential
	for _, key := range keys {
		nk := normalizeKey(key)
		if !slices.ContainsFunc(targets, func(t string) bool { return keyMatches(nk, t) }) {
			continue
		}
		c, err := k.auths[key].credential()
		if err != nil {
			return nil, fmt.Errorf("auths[%q].%w", key, err)
		}
		out = append(out, keyedCredential{key: nk, Credential: c})
	}
	return out, nil
}

// ordered sorts matches as kubelet's BasicDockerKeyring.Lookup: keys in
// reverse lexical order (a longer path before its prefix), matches of
// one key in the order they came.
func ordered(m []keyedCredential) []Credential {
	sort.SliceStable(m, func(i, j int) bool { return m[i].key > m[j].key })
	out := make([]Credential, len(m))
	for i := range m {
		out[i] = m[i].Credential
	}
	return out
}

func (a dockerAuth) credential() (Credential, error) {
	if a.Auth != "" {
		raw, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil {
			return Credential{}, errors.New("auth: not base64")
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return Credential{}, errors.New("auth: not user:password")
		}
		return Credential{User: user, Secret: pass}, nil
	}
	if a.IdentityToken != "" {
		return Credential{Secret: a.IdentityToken}, nil
	}
	return Credential{User: a.Username, Secret: a.Password}, nil
}

// normalizeRegistry names Docker Hub's hosts docker.io, as image names do.
func normalizeRegistry(host string) string {
	switch host {
	case "registry-1.docker.io", "index.docker.io":
		return "docker.io"
	}
	return host
}

// normalizeKey drops a key's scheme and trailing slash, and names Docker
// Hub docker.io ("https://index.docker.io/v1/" is its classic key).
func normalizeKey(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, p, _ := strings.Cut(key, "/")
	host = normalizeRegistry(host)
	if host == "docker.io" && (p == "v1/" || p == "v1" || p == "v2/" || p == "v2") {
		p = ""
	}
	return strings.TrimSuffix(host+"/"+p, "/")
}

// keyMatches is kubelet's URLsMatch: the key's host parts glob-match the
// target's (same number of parts), the ports are equal, and the key's
// path is a prefix of the target's, at a path segment.
func keyMatches(key, target string) bool {
	kHost, kPath, _ := strings.Cut(key, "/")
	tHost, tPath, _ := strings.Cut(target, "/")
	kName, kPort := splitPort(kHost)
	tName, tPort := splitPort(tHost)
	if kPort != tPort {
		return false
	}
	kParts, tParts := strings.Split(kName, "."), strings.Split(tName, ".")
	if len(kParts) != len(tParts) {
		return false
	}
	for i := range kParts {
		if ok, err := path.Match(kParts[i], tParts[i]); err != nil || !ok {
			return false
		}
	}
	return kPath == "" || tPath == kPath || strings.HasPrefix(tPath, kPath+"/")
}

func splitPort(host string) (string, string) {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		return host[:i], host[i+1:]
	}
	return host, ""
}
