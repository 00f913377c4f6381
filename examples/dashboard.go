package examples

import _ "embed"

// GrafanaDashboard is grafana-dashboard.json, the Grafana dashboard of
// podvisor's /metrics, for tests to check its queries against the series
// podvisor exposes.
//
//go:embed grafana-dashboard.json
var GrafanaDashboard []byte
