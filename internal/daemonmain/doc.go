// Package daemonmain is the start-up the Locus daemons share (cmd/scheduler
// and the cache node's pkg/node/daemon): the flag set, the LOCUS_*
// environment, the logger, the signals and the exit codes. Each daemon keeps
// its own flags, configuration and serve loop.
//
// The ladder of a daemon's main, and what each step exits with:
//
//	fs := daemonmain.NewFlagSet("cachenode", summary, stderr, &o.log)   // --log-level, --log-format, --help text
//	... register the daemon's own flags on fs ...
//	d, code, ok := daemonmain.Parse(fs, args, lookup, &o.log, stdout)
//	if !ok {
//		return code          // 0 after --help or --version (on stdout); 2 (ExitUsage) for a bad flag, value, argument or log setting
//	}
//	... build the config: on error return d.Fail(daemonmain.ExitUsage or ExitFailure, err)
//	ctx, stop := daemonmain.SignalContext(context.Background())      // ends on SIGTERM or SIGINT
//	defer stop()
//	... serve until ctx ends: on error return d.Fail(daemonmain.ExitFailure, err)
//	return daemonmain.ExitOK
//
// Every failure is one line on stderr, "<name>: <reason>", so that an
// operator (or a Kubernetes event) sees the whole reason; flag errors add
// "(see --help)". Parse is quiet while parsing: the flag package's own
// usage dump is not printed for a bad flag, only for --help, and then on
// stdout (flagenv.ParseHelp), where "cachenode --help | less" finds it.
package daemonmain
