package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// scrapeTimeout bounds one /metrics answer: gathering reads a few cgroup
// files per container and nothing that can hang, but a scraper must never
// hold a request open for ever.
const scrapeTimeout = 10 * time.Second

// registerMetrics adds GET /metrics (Prometheus' text format, from
// o.Gatherer) and GET /stats (Stats as JSON, from o.Stats) to mux, each
// only when its source is set.
func registerMetrics(mux *http.ServeMux, o Options) {
	if o.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{
			ErrorLog:      promErrorLog{o},
			ErrorHandling: promhttp.ContinueOnError,
			Timeout:       scrapeTimeout,
		}))
	}
	if o.Stats != nil {
		mux.Handle("GET /stats", statsHandler(o.Stats))
	}
}

// promErrorLog sends promhttp's gathering errors to the server's log.
type promErrorLog struct{ o Options }

func (l promErrorLog) Println(v ...any) {
	if l.o.Log != nil {
		l.o.Log.Warn("gather metrics", "err", fmt.Sprint(v...))
	}
}

var _ prometheus.Gatherer = (*prometheus.Registry)(nil)
