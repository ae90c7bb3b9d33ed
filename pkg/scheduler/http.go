package scheduler

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locuscache/locus/pkg/schedapi"
)

// Handler returns the HTTP handler: the JSON API, the status page at /,
// /metrics, /healthz and /readyz. Start serves it on Config.HTTPAddr; tests
// may serve it themselves (after Start).
func (s *Scheduler) Handler() http.Handler { return s.handler }

//go:embed status.html
var statusPage []byte

func (s *Scheduler) newHandler() http.Handler {
	mux := http.NewServeMux()
	post := func(pattern, call string, limit int64, h func(w http.ResponseWriter, r *http.Request) (any, error)) {
		mux.Handle("POST "+pattern, s.api(call, true, limit, h))
	}
	get := func(pattern, call string, h func(w http.ResponseWriter, r *http.Request) (any, error)) {
		mux.Handle("GET "+pattern, s.api(call, false, 0, h))
	}
	// placerGet registers a read of the placer's own state (slots in
	// use, queued tasks, lost tasks), which only the leader has: a
	// forwarding follower proxies it to the leader, as it does the
	// mutating calls (its own answer would show every slot free).
	placerGet := func(pattern, call string, h func(w http.ResponseWriter, r *http.Request) (any, error)) {
		mux.Handle("GET "+pattern, s.apiForwarded(call, h))
	}
	post("/v1/place", "place", s.limits.single, func(w http.ResponseWriter, r *http.Request) (any, error) {
		req, err := decodeBody(r, schedapi.DecodePlaceRequest)
		if err != nil {
			return nil, err
		}
		p, err := s.Place(r.Context(), req)
		if err != nil {
			return nil, err
		}
		return encoded(schedapi.AppendPlacementResponse(nil, &p)), nil
	})
	post("/v1/place/batch", "place_batch", s.limits.batch, func(w http.ResponseWriter, r *http.Request) (any, error) {
		req, err := decodeBody(r, schedapi.DecodePlaceBatchRequest)
		if err != nil {
			return nil, err
		}
		resp, err := s.PlaceBatch(r.Context(), req)
		if err != nil {
			return nil, err
		}
		return encoded(schedapi.AppendPlaceBatchResponse(make([]byte, 0, 160*len(resp.Placements)+32), &resp)), nil
	})
	post("/v1/complete", "complete", s.limits.single, func(w http.ResponseWriter, r *http.Request) (any, error) {
		req, err := decodeBody(r, schedapi.DecodeCompleteRequest)
		if err != nil {
			return nil, err
		}
		resp, err := s.Complete(r.Context(), req)
		if err != nil {
			return nil, err
		}
		return encoded(schedapi.AppendCompleteResponse(nil, &resp)), nil
	})
	post("/v1/complete/batch", "complete_batch", s.limits.batch, func(w http.ResponseWriter, r *http.Request) (any, error) {
		req, err := decodeBody(r, schedapi.DecodeCompleteBatchRequest)
		if err != nil {
			return nil, err
		}
		resp, err := s.CompleteBatch(r.Context(), req)
		if err != nil {
			return nil, err
		}
		return encoded(schedapi.AppendCompleteBatchResponse(make([]byte, 0, 64*len(resp.Results)+32), &resp)), nil
	})
	// {job...}: a job name may contain "/" (sent escaped as %2F or not).
	get("/v1/jobs/{job...}", "counters", func(w http.ResponseWriter, r *http.Request) (any, error) {
		job := r.PathValue("job")
		if job == "" { // "" would be every job: that is GET /v1/counters
			return nil, badRequest("empty job name (GET /v1/jobs lists the jobs, GET /v1/counters sums them)")
		}
		return s.JobCounters(r.Context(), job)
	})
	get("/v1/jobs", "jobs", func(w http.ResponseWriter, r *http.Request) (any, error) {
		jobs, err := s.Jobs(r.Context())
		if err != nil {
			return nil, err
		}
		return schedapi.JobsResponse{Jobs: jobs}, nil
	})
	get("/v1/counters", "counters", func(w http.ResponseWriter, r *http.Request) (any, error) {
		return s.JobCounters(r.Context(), "")
	})
	placerGet("/v1/ring", "ring", func(w http.ResponseWriter, r *http.Request) (any, error) {
		return s.Ring(), nil
	})
	placerGet("/v1/lost", "lost", func(w http.ResponseWriter, r *http.Request) (any, error) {
		return schedapi.LostResponse{Lost: s.Lost(r.URL.Query().Get("job"))}, nil
	})
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ok, why := s.Ready()
		code := http.StatusOK
		if !ok {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, map[string]any{"ready": ok, "reason": why})
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(statusPage)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// Routing, not bad input: an unknown path is a 404 with a code of
		// its own, so that clients do not read it as an unknown job. This
		// catch-all takes every method, so ServeMux's own 405 never
		// happens: a path served with other methods is answered 405 here,
		// in JSON, with the Allow header a 405 must carry (RFC 9110
		// 15.5.6). It was a 404 no_endpoint with an Allow header: a client
		// or probe asking GET /v1/place was told the endpoint does not
		// exist.
		msg := "no such endpoint: " + r.Method + " " + r.URL.Path
		if allow := allowedMethods(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			msg = "method not allowed: " + r.Method + " " + r.URL.Path + " (" + r.URL.Path + " takes " + strings.Join(allow, ", ") + ")"
			writeJSON(w, http.StatusMethodNotAllowed, schedapi.ErrorResponse{Error: msg, Code: schedapi.CodeMethodNotAllowed})
			return
		}
		msg += " (see GET /v1/ring, POST /v1/place, ...)"
		writeJSON(w, http.StatusNotFound, schedapi.ErrorResponse{Error: msg, Code: schedapi.CodeNoEndpoint})
	})
	return mux
}

// allowedMethods returns the methods other than r's that mux serves r's
// path with (not by its catch-all "/").
func allowedMethods(mux *http.ServeMux, r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if m == r.Method {
			continue
		}
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	return allow
}

// api wraps an API call: bearer-token check for mutating calls, the body
// size limit, forwarding to the leader (optional), the JSON answer or
// error, and metrics.
func (s *Scheduler) api(call string, mutating bool, limit int64, h func(w http.ResponseWriter, r *http.Request) (any, error)) http.Handler {
	return s.apiCall(call, mutating, mutating, limit, h)
}

// apiForwarded wraps a read that a forwarding follower proxies to the
// leader (no token needed, no body).
func (s *Scheduler) apiForwarded(call string, h func(w http.ResponseWriter, r *http.Request) (any, error)) http.Handler {
	return s.apiCall(call, false, true, 0, h)
}

func (s *Scheduler) apiCall(call string, mutating, forwarded bool, limit int64, h func(w http.ResponseWriter, r *http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		code := http.StatusOK
		defer func() {
			label := "forwarded" // code 0: the leader answered
			if code != 0 {
				label = strconv.Itoa(code)
			}
			s.metrics.requests.WithLabelValues(call).Observe(time.Since(start).Seconds())
			s.metrics.answers.WithLabelValues(call, label).Inc()
		}()
		if mutating {
			if err := s.checkToken(r.Header.Get("Authorization")); err != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="locus-scheduler"`)
				code = s.writeError(w, err)
				return
			}
			if r.ContentLength > limit {
				code = s.writeError(w, tooLarge(limit))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		if forwarded && s.forward(w, r) {
			code = 0 // the leader's answer
			return
		}
		v, err := h(w, r)
		if err != nil {
			code = s.writeError(w, err)
			return
		}
		if b, ok := v.(encoded); ok {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			_, _ = w.Write(b)
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
}

// encoded is an answer already encoded as JSON.
type encoded []byte

// bodyPool holds request body buffers (up to 4 MiB each are kept).
var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// decodeBody reads the request body (bounded by the MaxBytesReader the api
// wrapper installed) and decodes it with a schedapi request decoder (its
// fast path, else strict encoding/json; errors wrap ErrBadRequest).
func decodeBody[T any](r *http.Request, decode func([]byte) (T, error)) (T, error) {
	var v T
	buf := bodyPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 4<<20 {
			buf.Reset()
			bodyPool.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(r.Body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return v, tooLarge(tooBig.Limit)
		}
		return v, badRequest("reading the body: %v", err)
	}
	return decode(buf.Bytes())
}

func tooLarge(limit int64) error {
	return fmt.Errorf("%w: the limit is %d bytes", ErrTooLarge, limit)
}

// forwardDialTimeout bounds a connection to the leader, TLS handshake
// included, when Config.ClientTLSFor dials it.
var forwardDialTimeout = 10 * time.Second // a variable for tests

// forwardLeaderCheck is how often a forwarded call checks that the leader
// it went to is still the leader (see forward).
const forwardLeaderCheck = 200 * time.Millisecond

// forwardTransport dials the leader (with Config.ClientTLS, or a
// configuration from Config.ClientTLSFor per connection).
func (s *Scheduler) forwardTransport() http.RoundTripper {
	s.fwdOnce.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = s.cfg.ClientTLS // unused with ClientTLSFor: DialTLSContext does the TLS
		if tlsFor := s.cfg.ClientTLSFor; tlsFor != nil {
			// Every TLS connection goes through DialTLSContext: no proxy
			// (the transport would do the TLS itself, with TLSClientConfig,
			// and the client certificate would go to the proxy), and its
			// own timeouts (TLSHandshakeTimeout does not apply to it).
			t.Proxy = nil
			t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				cfg := tlsFor()
				if cfg.ServerName == "" {
					host, _, err := net.SplitHostPort(addr)
					if err != nil {
						return nil, err
					}
					cfg.ServerName = host
				}
				ctx, cancel := context.WithTimeout(ctx, forwardDialTimeout)
				defer cancel()
				d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: forwardDialTimeout}, Config: cfg}
				return d.DialContext(ctx, network, addr)
			}
		}
		s.fwd = t
	})
	return s.fwd
}

// checkToken compares the bearer token in constant time (ErrUnauthorized).
func (s *Scheduler) checkToken(header string) error {
	if s.cfg.AuthToken == "" {
		return nil
	}
	const p = "Bearer "
	if len(header) < len(p) || !strings.EqualFold(header[:len(p)], p) {
		return ErrUnauthorized
	}
	got := strings.TrimSpace(header[len(p):])
	if subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.AuthToken)) != 1 {
		return ErrUnauthorized
	}
	return nil
}

// forward proxies a call to the leader (a mutating one, or a read of the
// placer's state) when this scheduler is a follower with Etcd.Forward set;
// it reports whether it did.
func (s *Scheduler) forward(w http.ResponseWriter, r *http.Request) bool {
	if !s.cfg.Etcd.Forward || s.ha == nil || s.IsLeader() || r.Header.Get("X-Locus-Forwarded") != "" {
		return false
	}
	l, ok := s.Leader()
	if !ok || l.HTTP == "" || l.ID == s.cfg.NodeID {
		return false
	}
	scheme := "http"
	if s.cfg.TLS != nil {
		scheme = "https"
	}
	target := &url.URL{Scheme: scheme, Host: l.HTTP}
	// A leader that stalls (paused, or cut off from etcd but still
	// accepting connections) would hold the call until it resumed, long
	// after another leader was elected: end it then, with a 503 naming
	// the new leader, which the client can retry.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var moved atomic.Pointer[LeaderInfo]
	go func() {
		t := time.NewTicker(forwardLeaderCheck)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if n, ok := s.Leader(); ok && n.ID != l.ID {
					moved.Store(&n)
					cancel()
					return
				}
			}
		}
	}()
	r = r.WithContext(ctx)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set("X-Locus-Forwarded", s.cfg.NodeID)
		},
		Transport: s.forwardTransport(),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// A body over the limit (sent chunked: a Content-Length over
			// it was refused before forwarding) fails the proxy's read of
			// it: the client's fault, 413 as on the leader, not a 503
			// with Retry-After that it would retry forever.
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				s.writeError(w, tooLarge(tooBig.Limit))
				return
			}
			if n := moved.Load(); n != nil {
				s.writeError(w, &NotLeaderError{Leader: n.HTTP, LeaderGRPC: n.GRPC, LeaderID: n.ID})
				return
			}
			s.writeError(w, fmt.Errorf("%w: forwarding to the leader %s: %v", ErrUnavailable, l.HTTP, err))
		},
	}
	proxy.ServeHTTP(w, r)
	return true
}

// writeError writes the JSON error answer and returns its status code.
func (s *Scheduler) writeError(w http.ResponseWriter, err error) int {
	body := schedapi.ErrorResponse{Error: err.Error(), Code: CodeOf(err)}
	code := schedapi.StatusOfCode(body.Code)
	if errors.Is(err, context.Canceled) {
		code = 499 // client closed the request (nginx's code); nobody reads it
	}
	var nl *NotLeaderError
	if errors.As(err, &nl) {
		body.Leader = nl.Leader
		if nl.Leader != "" {
			w.Header().Set("X-Locus-Leader", nl.Leader)
			scheme := "http://"
			if s.cfg.TLS != nil {
				scheme = "https://"
			}
			w.Header().Set("Location", scheme+nl.Leader)
		}
	}
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	if code == http.StatusInternalServerError {
		s.log.Error("scheduler: internal error", "err", err)
	}
	writeJSON(w, code, body)
	return code
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // "must be > 0", not "must be \u003e 0": the body is JSON, not HTML
	_ = enc.Encode(v)
}
