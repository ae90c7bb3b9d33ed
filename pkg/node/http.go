package node

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpHandler routes the HTTP listener: /metrics, /healthz and /readyz
// exactly, everything else to the S3 gateway (404 without one).
func (n *Node) httpHandler(gw http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(n.metrics.reg, promhttp.HandlerOpts{
		Registry:          n.metrics.reg,
		ErrorLog:          nil,
		EnableOpenMetrics: false,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		switch n.state.Load() {
		case stateReady:
			w.Write([]byte("ready\n"))
		case stateNew:
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("starting\n"))
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("draining\n"))
		}
	})
	if gw == nil {
		gw = http.NotFoundHandler()
	}
	mux.Handle("/", gw)
	return mux
}
