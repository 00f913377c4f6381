// Package examples holds Pod manifests a user can drop into the manifests
// directory. Each runs offline with the busybox image that `make image`
// builds from Debian's busybox-static. grafana-dashboard.json is a Grafana
// dashboard of podvisor's /metrics (GrafanaDashboard, for tests).
package examples
