package containerd

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/distribution/reference"
)

// NodeCredentials returns the Credentials of a docker config.json: the
// first of files that exists, read at each pull (so an edit applies to
// the next pull). Its "auths" keys match as kubelet's keyring matches
// them: by registry host (each dot-separated part may be a glob, the port
// must be equal) and path prefix, the longest matching key winning.
// Other credentials (imagePullSecrets) can be chained in front of it.
func NodeCredentials(files ...string) Credentials {
	return func(ctx context.Context, image, host string) (string, string, error) {
		for _, f := range files {
			data, err := os.ReadFile(f)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return "", "", fmt.Errorf("credentials: %w", err)
			}
			var cfg dockerConfig
			if err := json.Unmarshal(data, &cfg); err != nil {
				return "", "", fmt.Errorf("credentials: %s: %w", f, err)
			}
			user, secret, err := cfg.lookup(image, host)
			if err != nil {
				return "", "", fmt.Errorf("credentials: %s: %w", f, err)
			}
			return user, secret, nil
		}
		return "", "", nil
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

// lookup finds the credentials of image pulled from host (the registry or
// a mirror of it): the image's repository path on host, matched against
// every key.
func (c dockerConfig) lookup(image, host string) (string, string, error) {
	target := normalizeRegistry(host)
	if named, err := reference.ParseNormalizedNamed(image); err == nil {
		target += "/" + reference.Path(named)
	}
	best, bestLen := "", -1
	for key := range c.Auths {
		k := normalizeKey(key)
		if keyMatches(k, target) && len(k) > bestLen {
			best, bestLen = key, len(k)
		}
	}
	if bestLen < 0 {
		return "", "", nil
	}
	a := c.Auths[best]
	if a.Auth != "" {
		raw, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil {
			return "", "", fmt.Errorf("auths[%q].auth: %w", best, err)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return "", "", fmt.Errorf("auths[%q].auth: not user:password", best)
		}
		return user, pass, nil
	}
	if a.IdentityToken != "" {
		return "", a.IdentityToken, nil
	}
	return a.Username, a.Password, nil
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
