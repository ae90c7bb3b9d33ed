package main

// Flags and helpers shared by the commands that talk to a running cluster:
// ring status, place, complete, jobs, stat and warm.
//
// Every flag of these commands can also be set by its LOCUS_* environment
// variable, as the daemons' flags can (internal/flagenv): --scheduler by
// LOCUS_SCHEDULER, --node by LOCUS_NODE, --tls-ca by LOCUS_TLS_CA. The
// command line wins over the environment.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/internal/flagenv"
	"github.com/locuscache/locus/pkg/client"
)

// envHelp is the paragraph every live-cluster command's --help ends with.
const envHelp = `Every flag can also be set by its environment variable: LOCUS_ and the
flag's name in capitals with "_" for "-" (--scheduler: LOCUS_SCHEDULER,
--tls-ca: LOCUS_TLS_CA). A flag on the command line wins.
`

// lookupEnv reads the LOCUS_* variables; tests replace it.
var lookupEnv = os.LookupEnv

// parseFlags parses args into fs and returns the positional arguments, in
// order: flags may come before, between or after them. Every flag not on
// the command line is then set from its LOCUS_* environment variable, if
// set (flagenv). --help prints usage to stdout and returns flag.ErrHelp
// (exit 0); a bad flag or environment value is a usage error (exit 2).
func parseFlags(fs *flag.FlagSet, args []string, usage string, stdout io.Writer) ([]string, error) {
	rest, _, err := parseFlagsGiven(fs, args, usage, stdout)
	return rest, err
}

// parseFlagsGiven is parseFlags that also returns the flags given on the
// command line (a command whose flags exclude each other checks those,
// not what the environment filled in). Flags named in noEnv take no
// environment variable.
func parseFlagsGiven(fs *flag.FlagSet, args []string, usage string, stdout io.Writer, noEnv ...string) (rest []string, given map[string]bool, err error) {
	err = parseHelp(fs, usage, stdout, func() error {
		err := fs.Parse(args)
		for err == nil && fs.NArg() > 0 {
			rest = append(rest, fs.Arg(0))
			err = fs.Parse(fs.Args()[1:])
		}
		if err != nil {
			return err
		}
		given = map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		return flagenv.Fill(fs, lookupEnv, noEnv...)
	})
	if err != nil {
		return nil, nil, err
	}
	return rest, given, nil
}

// parseHelp runs parse, which parses into fs, with usage as fs's --help
// text: on --help or -h it prints usage to stdout and returns flag.ErrHelp
// (locusctl exits 0); a bad flag is a usage error (exit 2, one line on
// stderr) saying to see --help. Every command's flag parsing goes through
// it (and flagenv.ParseHelp), so a help request always lands on stdout.
func parseHelp(fs *flag.FlagSet, usage string, stdout io.Writer, parse func() error) error {
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage) }
	err := flagenv.ParseHelp(fs, stdout, parse)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return usageErrorf("%v (see --help)", err)
	}
	return err
}

// flagSet reports whether the flag name was given, on the command line or
// by the environment.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// schedulerFlags are the flags naming the scheduler: --scheduler,
// --token-file, --timeout.
type schedulerFlags struct {
	url       string
	tokenFile string
	timeout   time.Duration
}

// register adds --scheduler, --token-file and --timeout (bound on each
// call) to fs.
func (s *schedulerFlags) register(fs *flag.FlagSet, defaultTimeout time.Duration) {
	s.registerURL(fs)
	fs.DurationVar(&s.timeout, "timeout", defaultTimeout, "")
}

// registerURL adds --scheduler and --token-file only; the calls are bound
// by client.DefaultSchedulerTimeout.
func (s *schedulerFlags) registerURL(fs *flag.FlagSet) {
	fs.StringVar(&s.url, "scheduler", "", "")
	fs.StringVar(&s.tokenFile, "token-file", "", "")
	s.timeout = client.DefaultSchedulerTimeout
}

// check validates the flags; required says whether --scheduler must be set.
func (s *schedulerFlags) check(required bool) error {
	switch {
	case required && strings.TrimSpace(s.url) == "":
		return usageErrorf("missing --scheduler URL (the scheduler's --http-addr, e.g. http://127.0.0.1:8080; or set LOCUS_SCHEDULER)")
	case s.timeout <= 0:
		return usageErrorf("--timeout must be positive, got %v", s.timeout)
	}
	if s.url != "" {
		sc, err := client.NewScheduler(client.SchedulerConfig{URL: s.url})
		if err != nil {
			return usageErrorf("--scheduler %q: %v", s.url, err)
		}
		sc.Close()
	}
	return nil
}

// open returns a client of the scheduler. tlsCfg is used for an https URL.
// A bad URL or token file is a usage error.
func (s *schedulerFlags) open(tlsCfg *tls.Config) (*client.Scheduler, error) {
	cfg := client.SchedulerConfig{URL: s.url, Timeout: s.timeout, TLS: tlsCfg}
	if s.tokenFile != "" {
		b, err := os.ReadFile(s.tokenFile)
		if err != nil {
			return nil, usageErrorf("--token-file: %v", err)
		}
		cfg.Token = strings.TrimSpace(string(b))
		if cfg.Token == "" {
			return nil, usageErrorf("--token-file %s is empty: it must hold the scheduler's bearer token (its --auth-token-file)", s.tokenFile)
		}
	}
	sc, err := client.NewScheduler(cfg)
	if err != nil {
		return nil, usageErrorf("--scheduler %q: %v", s.url, err)
	}
	return sc, nil
}

// openTLS is open with the client TLS configuration of t.
func (s *schedulerFlags) openTLS(t tlsFlags) (*client.Scheduler, error) {
	tlsCfg, err := t.config()
	if err != nil {
		return nil, err
	}
	return s.open(tlsCfg)
}

// tlsFlags are --tls-ca, --tls-cert and --tls-key, the cache node's own
// names: the CA that signed the nodes' (and an https scheduler's)
// certificates, and the client certificate an mTLS cluster requires.
type tlsFlags struct {
	ca, cert, key string
}

func (t *tlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.ca, "tls-ca", "", "")
	fs.StringVar(&t.cert, "tls-cert", "", "")
	fs.StringVar(&t.key, "tls-key", "", "")
}

// config returns the client TLS configuration the flags describe, nil
// when none is set (plaintext, the nodes' default). Errors are usage
// errors naming the flag.
func (t *tlsFlags) config() (*tls.Config, error) {
	if t.ca == "" && t.cert == "" && t.key == "" {
		return nil, nil
	}
	if (t.cert == "") != (t.key == "") {
		return nil, usageErrorf("--tls-cert and --tls-key go together (the client certificate of an mTLS cluster and its key)")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.cert != "" {
		cert, err := tls.LoadX509KeyPair(t.cert, t.key)
		if err != nil {
			return nil, usageErrorf("--tls-cert %s and --tls-key %s: %v", t.cert, t.key, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if t.ca != "" {
		pem, err := os.ReadFile(t.ca)
		if err != nil {
			return nil, usageErrorf("--tls-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageErrorf("--tls-ca %s holds no PEM certificate", t.ca)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// checkNodeAddr validates a --node value: host:port of a cache node's
// --grpc-addr.
func checkNodeAddr(addr string) error {
	if addr == "" {
		return usageErrorf("missing --node host:port (a cache node's --grpc-addr, e.g. 127.0.0.1:7070; or set LOCUS_NODE)")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" || strings.Contains(addr, "/") {
		return usageErrorf("--node %q: want host:port of a cache node's --grpc-addr, e.g. 127.0.0.1:7070", addr)
	}
	return nil
}

// openNode returns a cache-node client with the TLS the flags describe.
func openNode(t tlsFlags) (*client.Client, error) {
	tlsCfg, err := t.config()
	if err != nil {
		return nil, err
	}
	return client.New(client.Config{TLS: tlsCfg})
}

// schedulerError turns a scheduler call's error into one line for an
// operator: an unreachable scheduler says so and names the network error;
// any other error is kept as it is.
func schedulerError(url, what string, err error) error {
	var op *net.OpError
	if errors.Is(err, client.ErrSchedulerUnavailable) && !errors.Is(err, client.ErrNoNode) && errors.As(err, &op) {
		return fmt.Errorf("cannot reach the scheduler at %s (%v): is it running, and is --scheduler its --http-addr?", url, op)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// nodeError turns a cache-node call's error into one line, naming the
// node when it could not be reached.
func nodeError(addr, what string, err error) error {
	if msg := grpcMessage(err); errors.Is(err, client.ErrNodeUnavailable) && strings.HasPrefix(msg, "origin") {
		// The node answered: its origin is what failed.
		return fmt.Errorf("%s: the cache node at %s could not read the origin: %s", what, addr, msg)
	}
	if errors.Is(err, client.ErrNodeUnavailable) {
		return fmt.Errorf("cannot reach the cache node at %s (%s): is it running, and is --node its --grpc-addr (with the --tls-* flags if it uses TLS)?", addr, grpcMessage(err))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// grpcMessage returns the message of the gRPC status err wraps (the
// transport's own words: "connection refused", a TLS failure), else the
// whole error.
func grpcMessage(err error) string {
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(err, &gs) {
		if m := gs.GRPCStatus().Message(); m != "" {
			return m
		}
	}
	return err.Error()
}

// dash returns s, or "-" when it is empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ratio formats a hit ratio, or "-" when there was nothing to divide.
func ratio(r float64, n int64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", r)
}

// withSignals adapts a command's main to the command table: it runs main
// with a context that SIGINT and SIGTERM cancel. The first signal cancels
// it; a second one gets the default action (the process ends at once), for
// when the clean-up hangs. An error main returns after a signal is
// errInterrupted (what the cancellation broke is not the story).
func withSignals(main func(ctx context.Context, args []string, stdout, stderr io.Writer) error) func(args []string, stdout, stderr io.Writer) error {
	return func(args []string, stdout, stderr io.Writer) error {
		return runWithSignals(context.Background(), main, args, stdout, stderr)
	}
}

// runWithSignals is withSignals' body, with the context the signals'
// context derives from (a test cancels it as a signal would).
func runWithSignals(base context.Context, main func(ctx context.Context, args []string, stdout, stderr io.Writer) error, args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(base, os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	err := main(ctx, args, stdout, stderr)
	if err != nil && ctx.Err() != nil && !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errUsage) {
		return fmt.Errorf("%w (%v)", errInterrupted, err)
	}
	return err
}
