package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"
)

// etcdDialProblem dials each etcd endpoint as the etcd client does (TCP,
// then the TLS handshake with the client's credentials) and returns the
// first failure as " (endpoint: cause)", or "" when every endpoint
// connects. A call of the etcd client that cannot connect ends with
// "context deadline exceeded" whatever the cause (etcd down, a CA that
// did not sign etcd's certificate, a client certificate etcd refuses):
// the client drops the connection's error. It takes at most timeout.
func etcdDialProblem(ctx context.Context, cfg EtcdConfig, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, ep := range cfg.Endpoints {
		if err := dialEtcd(ctx, ep, cfg); err != nil && ctx.Err() == nil {
			return fmt.Sprintf(" (%s: %v)", ep, err)
		}
	}
	return ""
}

// dialEtcd connects to one endpoint, handshakes TLS where the etcd client
// would, and reads the first bytes: under TLS 1.3 a server refuses the
// client's certificate after the client's side of the handshake is done,
// so its alert is what the client reads first. Endpoints that are not
// TCP (unix sockets) are not dialed.
func dialEtcd(ctx context.Context, ep string, cfg EtcdConfig) error {
	addr, secure := ep, cfg.Credentials != nil || cfg.TLS != nil
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil {
			return nil // the etcd client said what it thinks of it
		}
		switch strings.ToLower(u.Scheme) {
		case "https":
			secure = true
		case "http":
			secure = false
		default:
			return nil
		}
		addr = u.Host
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer raw.Close()
	if !secure {
		return nil
	}
	creds := cfg.Credentials
	if creds == nil {
		creds = credentials.NewTLS(cfg.TLS) // what the etcd client builds from it
	}
	conn, _, err := creds.ClientHandshake(ctx, addr, raw)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(dl)
	}
	_, err = conn.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || errors.Is(err, io.EOF) || errors.As(err, &ne) && ne.Timeout() {
		return nil // connected; the server's silence is not a TLS failure
	}
	return err
}
