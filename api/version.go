package api

import (
	"context"
	"net/http"
	"runtime"
	"time"

	"github.com/podvisor/podvisor/internal/version"
)

// VersionInfo is GET /version's answer: the daemon's build and the
// containerd it talks to.
type VersionInfo struct {
	// Version is the daemon's release (internal/version).
	Version string `json:"version"`
	// GoVersion is the Go release the daemon was built with.
	GoVersion string `json:"goVersion"`
	// Platform is the daemon's GOOS/GOARCH.
	Platform string `json:"platform"`
	// ContainerdVersion is the containerd daemon's version; empty when it
	// is not known (ContainerdError says why).
	ContainerdVersion string `json:"containerdVersion,omitempty"`
	// ContainerdError is why ContainerdVersion is not known.
	ContainerdError string `json:"containerdError,omitempty"`
}

// versionTimeout bounds GET /version's question to containerd.
const versionTimeout = 3 * time.Second

// registerVersion adds GET /version.
func registerVersion(mux *http.ServeMux, o Options) {
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, versionInfo(r.Context(), o.ContainerdVersion))
	})
}

func versionInfo(ctx context.Context, containerd func(context.Context) (string, error)) VersionInfo {
	v := VersionInfo{Version: version.Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if containerd == nil {
		v.ContainerdError = "this podvisor does not say"
		return v
	}
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cv, err := containerd(ctx)
	if err != nil {
		v.ContainerdError = err.Error()
	} else {
		v.ContainerdVersion = cv
	}
	return v
}

// Version returns the daemon's version and the containerd version it
// talks to.
func (c *Client) Version(ctx context.Context) (*VersionInfo, error) {
	var v VersionInfo
	if err := c.getJSON(ctx, "/version", nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}
