package main

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// parseLogMaxSize reads --container-log-max-size: a number of bytes, or a
// Kubernetes quantity as kubelet's containerLogMaxSize ("10Mi").
func parseLogMaxSize(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		q, qerr := resource.ParseQuantity(s)
		if qerr != nil {
			return 0, fmt.Errorf("--container-log-max-size: %q is neither bytes nor a quantity such as 10Mi", s)
		}
		var ok bool
		if n, ok = q.AsInt64(); !ok {
			return 0, fmt.Errorf("--container-log-max-size: %q is not a whole number of bytes", s)
		}
	}
	if n <= 0 {
		return 0, fmt.Errorf("--container-log-max-size: %q: the size must be positive", s)
	}
	return n, nil
}

// logPolicy reads the rotation flags.
func logPolicy(c *cli.Context) (crilog.Policy, error) {
	size, err := parseLogMaxSize(c.String("container-log-max-size"))
	if err != nil {
		return crilog.Policy{}, cli.Exit(err.Error(), 2)
	}
	files := c.Int("container-log-max-files")
	if files < crilog.MinMaxFiles {
		return crilog.Policy{}, cli.Exit(fmt.Sprintf("--container-log-max-files: %d: a log needs at least %d files (the live one and the last rotated), as kubelet requires", files, crilog.MinMaxFiles), 2)
	}
	return crilog.Policy{MaxSize: size, MaxFiles: files}, nil
}

// logLinksDir reads --container-log-links: kubelet's /var/log/containers
// when the logs are kubelet's /var/log/pods and the flag is not given,
// else the flag ("" for none).
func logLinksDir(c *cli.Context) (string, error) {
	if !c.IsSet("container-log-links") {
		if filepath.Clean(c.String("log-dir")) == "/var/log/pods" {
			return "/var/log/containers", nil
		}
		return "", nil
	}
	dir := c.String("container-log-links")
	if dir == "" {
		return "", nil
	}
	if !filepath.IsAbs(dir) {
		return "", cli.Exit(fmt.Sprintf("--container-log-links: %q is not an absolute directory", dir), 2)
	}
	return filepath.Clean(dir), nil
}
