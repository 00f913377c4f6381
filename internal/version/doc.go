// Package version holds podvisor's version, set at build time with
// -ldflags "-X github.com/podvisor/podvisor/internal/version.Version=...".
package version
