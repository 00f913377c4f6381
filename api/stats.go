package api

import (
	"net/http"

	"github.com/podvisor/podvisor/internal/stats"
)

// StatsSource answers GET /stats; metrics.Metrics is one.
type StatsSource interface {
	// Stats reads the resource use of every pod's containers now.
	Stats() stats.Summary
}

func statsHandler(src StatsSource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, src.Stats())
	}
}
