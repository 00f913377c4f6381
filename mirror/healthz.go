package mirror

import (
	"net/http"
)

// HealthzHandler answers kubelet's health check, as kubelet serves it on
// --healthz-bind-address (127.0.0.1:10248), which kubeadm's
// wait-control-plane polls: GET /healthz (and /healthz/ping) is 200 "ok"
// while health (nil: always) returns nil, 500 saying why otherwise.
func HealthzHandler(health func() error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz/ping", func(w http.ResponseWriter, _ *http.Request) {
		ok(w)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if health != nil {
			if err := health(); err != nil {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.Header().Set("X-Content-Type-Options", "nosniff")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write([]byte("[-]podvisor failed: " + err.Error() + "\nhealthz check failed\n"))
				return
			}
		}
		ok(w)
	})
	return mux
}

func ok(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write([]byte("ok"))
}
