package supervise

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/podvisor/podvisor/internal/expand"
	v1 "k8s.io/api/core/v1"
)

// expandSubPathExprs returns c with the subPathExpr of each volumeMount
// expanded into its subPath, as kubelet's makeMounts does before a
// container is created: $(VAR) references are taken from the container's
// own environment (env and envFrom, as resolved; not the image's), a
// variable that is unset or empty is an error, and the result must be a
// relative path without "..". The errors are kubelet's: the container
// waits in CreateContainerConfigError with them. c itself is returned when
// no mount has a subPathExpr.
func expandSubPathExprs(c *v1.Container, env []string) (*v1.Container, error) {
	if !slices.ContainsFunc(c.VolumeMounts, func(m v1.VolumeMount) bool { return m.SubPathExpr != "" }) {
		return c, nil
	}
	vars := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v // the last definition wins, as kubelet's envVarsToMap
	}
	out := c.DeepCopy()
	for i := range out.VolumeMounts {
		m := &out.VolumeMounts[i]
		if m.SubPathExpr == "" {
			continue
		}
		sub, err := expandSubPathExpr(m.SubPathExpr, vars)
		if err != nil {
			return nil, err
		}
		m.SubPath, m.SubPathExpr = sub, ""
	}
	return out, nil
}

// expandSubPathExpr is kubelet's ExpandContainerVolumeMounts followed by
// its subPath checks.
func expandSubPathExpr(expr string, vars map[string]string) (string, error) {
	var missing []string
	sub := expand.Vars(expr, func(k string) (string, bool) {
		v, ok := vars[k]
		if !ok || v == "" {
			if !slices.Contains(missing, k) {
				missing = append(missing, k)
			}
		}
		return v, true
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("missing value for %s", strings.Join(missing, ", "))
	}
	if filepath.IsAbs(sub) {
		return "", fmt.Errorf("error SubPath `%s` must not be an absolute path", sub)
	}
	if slices.Contains(strings.Split(filepath.ToSlash(sub), "/"), "..") {
		return "", fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", sub)
	}
	return sub, nil
}
