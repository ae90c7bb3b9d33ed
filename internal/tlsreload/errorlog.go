package tlsreload

import (
	"context"
	"log"
	"log/slog"
	"strings"
)

// ServerErrorLog returns the ErrorLog of an http.Server serving TLS: its
// lines (a failed handshake, a failed accept) go to logger at Warn,
// except a connection closed before it sent a TLS hello, which is Debug:
// that is a TCP check (kubelet's probes under mTLS, which cannot present
// a client certificate; a load balancer's health check), not a failure,
// and at Warn it was a line for every probe.
func ServerErrorLog(logger *slog.Logger) *log.Logger {
	return slog.NewLogLogger(probeQuiet{logger.Handler()}, slog.LevelWarn)
}

// probeQuiet lowers net/http's line for a connection that closed before
// its TLS hello ("http: TLS handshake error from <addr>: EOF"; one that
// broke off within the handshake ends in "unexpected EOF" or names the
// error) to Debug.
type probeQuiet struct{ slog.Handler }

func (h probeQuiet) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "http: TLS handshake error from ") && strings.HasSuffix(r.Message, ": EOF") &&
		!strings.HasSuffix(r.Message, "unexpected EOF") {
		if !h.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h probeQuiet) WithAttrs(as []slog.Attr) slog.Handler {
	return probeQuiet{h.Handler.WithAttrs(as)}
}
func (h probeQuiet) WithGroup(name string) slog.Handler { return probeQuiet{h.Handler.WithGroup(name)} }
