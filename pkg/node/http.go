package node

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpHandler routes the HTTP listener: GET (or HEAD) of exactly /metrics,
// /healthz and /readyz, everything else to the S3 gateway (404 without
// one). It is not an http.ServeMux on purpose: a ServeMux cleans paths and
// redirects "/b/a//k" or "/b/./k", which are valid, distinct S3 keys the
// gateway must receive as sent.
func (n *Node) httpHandler(gw http.Handler) http.Handler {
	metrics := promhttp.HandlerFor(n.metrics.reg, promhttp.HandlerOpts{Registry: n.metrics.reg})
	if gw == nil {
		gw = http.NotFoundHandler()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			switch r.URL.Path {
			case "/metrics":
				metrics.ServeHTTP(w, r)
				return
			case "/healthz":
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.Write([]byte("ok\n"))
				return
			case "/readyz":
				n.readyz(w)
				return
			}
		}
		gw.ServeHTTP(w, r)
	})
}

func (n *Node) readyz(w http.ResponseWriter) {
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
}
