package daemonmain

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/locuscache/locus/internal/flagenv"
)

// The exit codes of the daemons.
const (
	// ExitOK: a clean shutdown after SIGTERM or SIGINT, or --help.
	ExitOK = 0
	// ExitFailure: the daemon could not start (a file it needs is
	// missing or unreadable, a listener that cannot bind) or failed while
	// serving.
	ExitFailure = 1
	// ExitUsage: the command line is wrong: a bad flag, flag value,
	// environment variable or positional argument, or flag values the
	// daemon's Config refuses (an impossible combination).
	ExitUsage = 2
)

// LogFlags are the values of --log-level and --log-format.
type LogFlags struct {
	// Level is debug, info, warn or error (default info).
	Level string
	// Format is text or json (default text).
	Format string
}

// Version describes the running binary: the main module's version (a
// tag, or "(devel)" for a source build) and, when the build recorded it,
// the VCS revision and whether the tree was modified.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev != "" {
		v += " " + rev + modified
	}
	return v + " " + bi.GoVersion
}

// Logger returns the slog logger the flags describe, writing to w, or an
// error naming the bad flag.
func (l LogFlags) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.Level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", l.Level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch l.Format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", l.Format)
}

// NewFlagSet returns the flag set of the daemon name: it returns errors
// rather than exiting, writes to stderr, prints summary and the flags with
// their LOCUS_* variables for --help (flagenv.Usage; Parse sends that text
// to stdout), and has --log-level
// and --log-format, which set log.
func NewFlagSet(name, summary string, stderr io.Writer, log *LogFlags) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&log.Level, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&log.Format, "log-format", "text", "log format on stderr: text or json")
	fs.Bool("version", false, "print the version (module version, VCS revision, Go version) and exit")
	fs.Usage = flagenv.Usage(fs, summary)
	return fs
}

// Daemon is a daemon whose flags parsed: its name, its stderr and its
// logger.
type Daemon struct {
	Name   string
	Stderr io.Writer
	Log    *slog.Logger
}

// Parse parses args, then the LOCUS_* environment (lookup, see
// flagenv.Parse), into fs (from NewFlagSet, whose output is stderr), and
// builds the logger of log (read after parsing). ok is false when the
// daemon must exit with code: ExitOK after --help or --version (printed
// on stdout, so that "cachenode --help | less" shows it), ExitUsage for a bad
// flag or value, a positional argument or a bad log flag (one line on
// stderr).
func Parse(fs *flag.FlagSet, args []string, lookup func(string) (string, bool), log *LogFlags, stdout io.Writer) (d *Daemon, code int, ok bool) {
	stderr := fs.Output()
	name := fs.Name()
	// A bad flag is one line on stderr, --help the full text on stdout.
	err := flagenv.ParseHelp(fs, stdout, func() error { return flagenv.Parse(fs, args, lookup) })
	if errors.Is(err, flag.ErrHelp) {
		return nil, ExitOK, false
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v (see --help)\n", name, err)
		return nil, ExitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q (flags only; see --help)\n", name, fs.Args())
		return nil, ExitUsage, false
	}
	if v := fs.Lookup("version"); v != nil && v.Value.String() == "true" {
		fmt.Fprintf(stdout, "%s %s\n", name, Version())
		return nil, ExitOK, false
	}
	logger, err := log.Logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, ExitUsage, false
	}
	return &Daemon{Name: name, Stderr: stderr, Log: logger}, 0, true
}

// Fail writes err to stderr as one line, "<name>: <err>" (new lines
// replaced by spaces, a leading "<name>: " of err not repeated), and
// returns code.
func (d *Daemon) Fail(code int, err error) int {
	fmt.Fprintf(d.Stderr, "%s: %s\n", d.Name, oneLine(d.Name, err))
	return code
}

// oneLine renders err on one line without a leading "<name>: ".
func oneLine(name string, err error) string {
	return strings.TrimPrefix(strings.ReplaceAll(err.Error(), "\n", " "), name+": ")
}

// SignalContext returns a context that ends on the first SIGTERM or
// SIGINT, the daemons' signal to shut down. The signals are released as
// soon as it ends, so a second one kills the process as usual while the
// daemon is still shutting down; stop releases them earlier.
func SignalContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	ctx, stop = signal.NotifyContext(parent, syscall.SIGTERM, syscall.SIGINT)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}
