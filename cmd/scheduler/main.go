// Command scheduler is the Locus placement service: it watches the cache
// nodes through the gossip (as an observer), answers "where should this
// task run?" over a JSON API and gRPC, counts DATA_LOCAL / RACK_LOCAL /
// OTHER_LOCAL tasks and the cache outcome of each, and exports Prometheus
// metrics and a status page. With --etcd-endpoints several schedulers
// elect a leader and keep their counters in etcd.
//
// Every flag can also be set through the environment: --etcd-endpoints is
// LOCUS_ETCD_ENDPOINTS. Run scheduler --help for the list. See package
// pkg/scheduler for the API and the rules.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/locuscache/locus/internal/daemonmain"
	"github.com/locuscache/locus/internal/flagenv"
	"github.com/locuscache/locus/internal/tlsreload"
	"github.com/locuscache/locus/internal/units"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/scheduler"
)

const summary = `scheduler: the Locus placement service.

It joins the cache nodes' gossip as an observer (--gossip-addr, --join), and
places tasks on the node that owns their split's block (DATA_LOCAL), else on
a node in the owner's rack after --locality-wait (RACK_LOCAL), else anywhere
after twice that (OTHER_LOCAL). A placed task holds one of its node's slots
until it completes, or until the node dies (the task is reported lost).

HTTP (--http-addr): POST /v1/place, /v1/place/batch, /v1/complete,
/v1/complete/batch; GET /v1/jobs/{job}, /v1/jobs, /v1/counters, /v1/ring,
/v1/lost, /metrics, /healthz, /readyz, and a status page at /. gRPC (--grpc-addr):
locus.scheduler.v1.SchedulerService, health, reflection.

Standalone by default (state in memory). With --etcd-endpoints, schedulers
elect a leader: the leader places, followers answer 503 naming it (or
forward with --forward-to-leader); the cluster config (block size,
replication, locality wait) at <prefix>config overrides the flags, and the
counters are persisted so a failover loses none.

The replication is the cache nodes': placement uses the --replication they
announce in the gossip (default 2); --replication here only checks it.

Sizes take plain bytes or units: 134217728, 128MiB, 1g, 500MB.
SIGTERM or SIGINT: stop accepting, answer waiting calls, flush the counters,
resign the leadership, leave the gossip, exit 0.

Usage: scheduler [flags]`

// options are the parsed flags.
type options struct {
	nodeID                              string
	gossipAddr, gossipAdvertise         string
	join                                []string
	joinTimeout                         time.Duration
	gossipKeyFile, gossipTuning         string
	grpcAddr, grpcAdvertise             string
	httpAddr, httpAdvertise             string
	etcdEndpoints                       []string
	etcdPrefix                          string
	etcdSessionTTL, etcdDialTimeout     time.Duration
	etcdUser, etcdPasswordFile          string
	etcdCA, etcdCert, etcdKey           string
	forward                             bool
	localityWait, maxQueueWait, maxWait time.Duration
	replication, maxBatchTasks          int
	blockSize                           int64
	maxBody, maxBatchBody               int64
	authTokenFile                       string
	tlsCert, tlsKey, tlsCA              string
	log                                 daemonmain.LogFlags
	shutdownTimeout                     time.Duration
}

func newFlags(o *options, stderr io.Writer) *flag.FlagSet {
	fs := daemonmain.NewFlagSet("scheduler", summary, stderr, &o.log)
	fs.StringVar(&o.nodeID, "node-id", "", "scheduler id in the gossip and the etcd election (default: scheduler-<host name>)")
	fs.StringVar(&o.gossipAddr, "gossip-addr", scheduler.DefaultGossipAddr, "gossip (memberlist) listen address ip:port, UDP and TCP")
	fs.StringVar(&o.gossipAdvertise, "gossip-advertise-addr", "", "gossip address announced to others, when --gossip-addr is not reachable as is (0.0.0.0, NAT)")
	fs.Var(flagenv.List(&o.join), "join", "comma-separated gossip addresses (host:port) of cluster members to join")
	fs.DurationVar(&o.joinTimeout, "join-timeout", scheduler.DefaultJoinTimeout, "how long to keep retrying --join while no member answers")
	fs.StringVar(&o.gossipKeyFile, "gossip-key-file", "", "file holding the gossip encryption key (16, 24 or 32 bytes, raw or base64); the same on every member")
	fs.StringVar(&o.gossipTuning, "gossip-tuning", "lan", "failure detector timings: lan (a dead node is detected in 3-7s) or loopback (1-3s; single-host clusters)")
	fs.StringVar(&o.grpcAddr, "grpc-addr", scheduler.DefaultGRPCAddr, "gRPC listen address (SchedulerService, health, reflection)")
	fs.StringVar(&o.grpcAdvertise, "grpc-advertise-addr", "", "gRPC address announced (gossip metadata, etcd leader record) when --grpc-addr is 0.0.0.0")
	fs.StringVar(&o.httpAddr, "http-addr", scheduler.DefaultHTTPAddr, "HTTP listen address (JSON API, status page, /metrics, /healthz, /readyz)")
	fs.StringVar(&o.httpAdvertise, "http-advertise-addr", "", "HTTP address announced (followers name it as the leader) when --http-addr is 0.0.0.0")
	fs.Var(flagenv.List(&o.etcdEndpoints), "etcd-endpoints", "comma-separated etcd endpoints (http://host:2379); empty: standalone, in-memory state")
	fs.StringVar(&o.etcdPrefix, "etcd-prefix", scheduler.DefaultEtcdPrefix, "prefix of the scheduler's etcd keys")
	fs.DurationVar(&o.etcdSessionTTL, "etcd-session-ttl", scheduler.DefaultEtcdSessionTTL, "lease TTL of the leader's election key: a dead leader is replaced about this long after it stops (whole seconds)")
	fs.DurationVar(&o.etcdDialTimeout, "etcd-dial-timeout", scheduler.DefaultEtcdDialTimeout, "bound on connecting to etcd at start")
	fs.StringVar(&o.etcdUser, "etcd-username", "", "etcd user name (optional)")
	fs.StringVar(&o.etcdPasswordFile, "etcd-password-file", "", "file holding the etcd password")
	fs.StringVar(&o.etcdCA, "etcd-tls-ca", "", "PEM CA bundle verifying etcd's certificate (every endpoint then https://; read again when the file changes)")
	fs.StringVar(&o.etcdCert, "etcd-tls-cert", "", "PEM client certificate for etcd (with --etcd-tls-key; every endpoint then https://; read again when the files change)")
	fs.StringVar(&o.etcdKey, "etcd-tls-key", "", "PEM private key of --etcd-tls-cert")
	fs.BoolVar(&o.forward, "forward-to-leader", false, "on a follower, proxy mutating calls to the leader instead of answering 503 naming it, and GET /v1/ring and /v1/lost (the leader's slot use and lost tasks)")
	fs.DurationVar(&o.localityWait, "locality-wait", scheduler.DefaultLocalityWait, "how long a task waits for a data-local slot before rack-local, and as long again before any node; 0: no wait")
	fs.IntVar(&o.replication, "replication", 0, "preference-list length (nodes per block where a task counts DATA_LOCAL); 0: the cache nodes' --replication, from the gossip (2 while no node is known). The nodes' value always wins: one set here that differs is logged as a warning and not used")
	fs.Var(units.Flag(&o.blockSize), "block-size", "cluster block size for placement keys; default: the cache nodes' (128MiB while none is known); when set it must match theirs")
	fs.DurationVar(&o.maxQueueWait, "max-queue-wait", scheduler.DefaultMaxQueueWait, "how long a place call waits for a slot once queued, before 503")
	fs.DurationVar(&o.maxWait, "max-wait", scheduler.DefaultMaxWait, "largest wait_ms a request may ask for")
	fs.IntVar(&o.maxBatchTasks, "max-batch-tasks", scheduler.DefaultMaxBatchTasks, "most tasks in one batch call")
	o.maxBody, o.maxBatchBody = scheduler.DefaultMaxBodyBytes, scheduler.DefaultMaxBatchBodyBytes
	fs.Var(units.Flag(&o.maxBody), "max-body-bytes", "request body limit of single calls (larger: 413)")
	fs.Var(units.Flag(&o.maxBatchBody), "max-batch-body-bytes", "request body limit of batch calls (larger: 413)")
	fs.StringVar(&o.authTokenFile, "auth-token-file", "", "file holding a bearer token that mutating calls (POST, gRPC Place/PlaceBatch/Complete/CompleteBatch) must send; reads stay open")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate: enables TLS on the HTTP and gRPC listeners (with --tls-key); it, the key and --tls-ca are read again when their files change")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&o.tlsCA, "tls-ca", "", "PEM CA: require client certificates signed by it (mTLS)")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM, how long to wait for in-flight calls and the final counter flush")
	return fs
}

func main() {
	os.Exit(run(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}

// run is main with its inputs explicit, for tests. It returns the exit
// code: 0 after a clean shutdown, 2 for bad flags or an unusable
// configuration, 1 for a failure to start or serve (daemonmain's codes).
func run(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	var o options
	fs := newFlags(&o, stderr)
	d, code, ok := daemonmain.Parse(fs, args, lookup, &o.log, stdout)
	if !ok {
		return code
	}
	cfg, err := buildConfig(o, d.Log)
	if err != nil {
		return d.Fail(exitCode(err), err)
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		return d.Fail(exitCode(err), err)
	}
	ctx, stop := daemonmain.SignalContext(context.Background())
	defer stop()
	if err := serve(ctx, s, o.shutdownTimeout, d.Log); err != nil {
		code := daemonmain.ExitFailure
		if errors.Is(err, membership.ErrKeyLength) || errors.Is(err, membership.ErrInvalidConfig) || errors.Is(err, membership.ErrBadAddress) {
			code = daemonmain.ExitUsage
		}
		return d.Fail(code, err)
	}
	return daemonmain.ExitOK
}

// exitCode is the exit code of an error building the scheduler: ExitUsage
// for flag values it refuses, ExitFailure for a file it cannot read or use
// (a TLS certificate, the auth token: missing, unreadable, empty or not
// PEM), as the cache node does.
func exitCode(err error) int {
	var pe *fs.PathError
	var fe fileError
	if errors.As(err, &pe) || errors.As(err, &fe) {
		return daemonmain.ExitFailure
	}
	return daemonmain.ExitUsage
}

// fileError marks an error about a file a flag names (its contents or its
// absence), not about the flag's value: exit 1.
type fileError struct{ err error }

func (e fileError) Error() string { return e.err.Error() }
func (e fileError) Unwrap() error { return e.err }

// buildConfig turns the flags into a scheduler.Config (reading the token,
// password and TLS files).
func buildConfig(o options, log *slog.Logger) (scheduler.Config, error) {
	cfg := scheduler.Config{
		NodeID:     o.nodeID,
		GossipAddr: o.gossipAddr, GossipAdvertiseAddr: o.gossipAdvertise, GossipKeyFile: o.gossipKeyFile,
		Join: o.join, JoinTimeout: o.joinTimeout,
		HTTPAddr: o.httpAddr, HTTPAdvertiseAddr: o.httpAdvertise,
		GRPCAddr: o.grpcAddr, GRPCAdvertiseAddr: o.grpcAdvertise,
		BlockSize: o.blockSize, Replication: o.replication, LocalityWait: o.localityWait,
		MaxQueueWait: o.maxQueueWait, MaxWait: o.maxWait, MaxBatchTasks: o.maxBatchTasks,
		MaxBodyBytes: o.maxBody, MaxBatchBodyBytes: o.maxBatchBody,
		Logger: log,
		Etcd: scheduler.EtcdConfig{
			Endpoints: o.etcdEndpoints, Prefix: o.etcdPrefix, SessionTTL: o.etcdSessionTTL,
			DialTimeout: o.etcdDialTimeout, Username: o.etcdUser, Forward: o.forward,
		},
	}
	if o.shutdownTimeout <= 0 {
		return cfg, fmt.Errorf("--shutdown-timeout %v: want a duration > 0 (calls in flight and the final counter flush need time)", o.shutdownTimeout)
	}
	switch {
	case o.localityWait == 0:
		cfg.LocalityWait = scheduler.NoLocalityWait
	case o.localityWait < 0:
		return cfg, fmt.Errorf("--locality-wait %v: want a duration >= 0", o.localityWait)
	}
	switch {
	case o.blockSize < 0:
		return cfg, fmt.Errorf("--block-size %d: want a size > 0, or leave it unset to take the cache nodes'", o.blockSize)
	case o.maxBody <= 0:
		return cfg, fmt.Errorf("--max-body-bytes %d: want a size > 0", o.maxBody)
	case o.maxBatchBody <= 0:
		return cfg, fmt.Errorf("--max-batch-body-bytes %d: want a size > 0", o.maxBatchBody)
	}
	if o.etcdSessionTTL%time.Second != 0 {
		return cfg, fmt.Errorf("--etcd-session-ttl %v: want whole seconds", o.etcdSessionTTL)
	}
	switch o.gossipTuning {
	case "lan":
		cfg.GossipTuning = membership.LANTuning()
	case "loopback":
		cfg.GossipTuning = membership.LoopbackTuning()
	default:
		return cfg, fmt.Errorf("--gossip-tuning %q: want lan or loopback", o.gossipTuning)
	}
	if o.authTokenFile != "" {
		tok, err := readSecret(o.authTokenFile)
		if err != nil {
			return cfg, fileError{fmt.Errorf("--auth-token-file: %w", err)}
		}
		cfg.AuthToken = tok
	}
	if o.etcdPasswordFile != "" {
		pw, err := readSecret(o.etcdPasswordFile)
		if err != nil {
			return cfg, fileError{fmt.Errorf("--etcd-password-file: %w", err)}
		}
		cfg.Etcd.Password = pw
	}
	var err error
	if cfg.TLS, cfg.ClientTLS, cfg.ClientTLSFor, err = loadTLS(o.tlsCert, o.tlsKey, o.tlsCA, log); err != nil {
		return cfg, err
	}
	if o.etcdCA != "" || o.etcdCert != "" || o.etcdKey != "" {
		if cfg.Etcd.TLS, cfg.Etcd.Credentials, err = etcdTLS(o.etcdCA, o.etcdCert, o.etcdKey, log); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// readSecret reads a one-line secret file (surrounding white space
// trimmed; an empty file is an error).
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

// loadTLS builds the listeners' TLS config (and the one to dial another
// scheduler with, when forwarding, and with --tls-ca a function that
// gives it per connection): with --tls-ca, clients must present a
// certificate signed by it. The certificate and key, and the CA bundle,
// are reloaded when their files change (tlsreload), so neither a rotated
// certificate nor a rotated CA needs a restart; so are the etcd client's
// (etcdTLS).
func loadTLS(certFile, keyFile, caFile string, log *slog.Logger) (server, client *tls.Config, clientFor func() *tls.Config, err error) {
	switch {
	case certFile == "" && keyFile == "" && caFile == "":
		return nil, nil, nil, nil
	case certFile == "" || keyFile == "":
		return nil, nil, nil, errors.New("--tls-cert and --tls-key go together")
	}
	pair, err := tlsreload.Load(certFile, keyFile, log)
	if err != nil {
		return nil, nil, nil, fileError{fmt.Errorf("--tls-cert %s / --tls-key %s: %w", certFile, keyFile, err)}
	}
	server = &tls.Config{GetCertificate: pair.GetCertificate, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	client = &tls.Config{GetClientCertificate: pair.GetClientCertificate, MinVersion: tls.VersionTLS12}
	if caFile != "" {
		ca, err := tlsreload.LoadCA(caFile, log)
		if err != nil {
			return nil, nil, nil, fileError{fmt.Errorf("--tls-ca: %w", err)}
		}
		ca.RequireClients(server)
		clientFor = func() *tls.Config { return ca.ClientConfig(client) } // ClientConfig copies client
	}
	return server, client, clientFor, nil
}

// etcdTLS builds the etcd client's TLS config; its client certificate is
// reloaded when its files change, as the listeners' is. With a CA bundle
// it also returns gRPC credentials that check etcd against the bundle as
// it is at each handshake (the etcd client builds its own from the config
// once, so a bundle in the config alone would be read once).
func etcdTLS(caFile, certFile, keyFile string, log *slog.Logger) (*tls.Config, credentials.TransportCredentials, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if certFile != "" || keyFile != "" {
		if certFile == "" || keyFile == "" {
			return nil, nil, errors.New("--etcd-tls-cert and --etcd-tls-key go together")
		}
		pair, err := tlsreload.Load(certFile, keyFile, log)
		if err != nil {
			return nil, nil, fileError{fmt.Errorf("--etcd-tls-cert %s / --etcd-tls-key %s: %w", certFile, keyFile, err)}
		}
		c.GetClientCertificate = pair.GetClientCertificate
	}
	if caFile == "" {
		return c, nil, nil // the system's roots
	}
	ca, err := tlsreload.LoadCA(caFile, log)
	if err != nil {
		return nil, nil, fileError{fmt.Errorf("--etcd-tls-ca: %w", err)}
	}
	return ca.ClientConfig(c), ca.ClientCredentials(c), nil
}

// serve runs the scheduler until ctx ends (a signal), then shuts it down.
func serve(ctx context.Context, s *scheduler.Scheduler, shutdownTimeout time.Duration, log *slog.Logger) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	log.Info("signal received: shutting down", "timeout", shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return s.Shutdown(sctx)
}
