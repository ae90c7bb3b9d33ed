// Command locusctl is the Locus operator CLI: capacity planning for the ring,
// cache policy simulation over traces, split planning for Parquet datasets,
// the one-command local cluster, and the commands that talk to a running
// cluster: ring status, place and complete a task, job counters, stat an
// object through a node, and warm a prefix.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one locusctl subcommand. run receives the arguments after the
// subcommand's name and writes its normal output to stdout.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// commands maps each subcommand name to its implementation. Each lives in its
// own file.
var commands = map[string]command{
	"ring":      {"the ring: live status (ring status), capacity planning (ring simulate)", runRing},
	"cache-sim": {"replay a cache trace through the page-cache policies and print hit ratios", runCacheSim},
	"plan":      {"list the Parquet row groups under a prefix as splits, with placement key and owner", runPlan},
	"up":        {"run a local cluster (3 nodes, scheduler, file origin) with a Parquet workload, until Ctrl-C", runUp},
	"place":     {"ask the scheduler where one task should run; it holds a slot until 'complete'", runPlace},
	"complete":  {"report a placed task done, with its bytes by source", runComplete},
	"jobs":      {"locality counters and hit ratios of a job, or of every job", runJobs},
	"stat":      {"a cache node's view of an object: size, version, mtime, Parquet row groups", runStat},
	"warm":      {"load the Parquet objects under a prefix into their owners' caches", runWarm},
	"sizing":    {"how large should the cache be: each node's hit ratio at 0.25x to 4x its capacity", runSizing},
}

// errUsage marks an error caused by bad arguments: locusctl exits with 2.
var errUsage = errors.New("usage error")

// errInterrupted marks a command stopped by SIGINT or SIGTERM before it
// finished: locusctl says so and exits with 130, the shell's code for an
// interrupt, instead of reporting what the cancellation broke.
var errInterrupted = errors.New("interrupted")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 2 && args[0] == "help" && !isHelpWord(args[1]) {
		if _, ok := commands[args[1]]; !ok {
			fmt.Fprintf(stderr, "locusctl: no help for unknown command %q\n\n", args[1])
			usage(stderr)
			return 2
		}
		return run([]string{args[1], "--help"}, stdout, stderr) // locusctl help stat
	}
	if len(args) == 0 {
		// No command is a usage error: the usage on stderr, exit 2.
		usage(stderr)
		return 2
	}
	if isHelpWord(args[0]) {
		// A help request: the usage on stdout ("locusctl --help | less"), exit 0.
		usage(stdout)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "locusctl: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	if err := cmd.run(args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if errors.Is(err, errInterrupted) {
			fmt.Fprintf(stderr, "locusctl %s: interrupted\n", args[0])
			return 130
		}
		fmt.Fprintf(stderr, "locusctl %s: %v\n", args[0], err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "locusctl: operator CLI for Locus, the locality-aware cache for data-lake files.")
	fmt.Fprintln(w, "\nUsage: locusctl <command> [flags]   (locusctl <command> --help for its flags)")
	fmt.Fprintln(w, "\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

// usageErrorf returns an error wrapping errUsage.
func usageErrorf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

// isHelpWord reports whether a is a request for the top-level usage: "help"
// or a help flag ("locusctl help --help" asks for it too).
func isHelpWord(a string) bool {
	return a == "help" || a == "-h" || a == "-help" || a == "--help"
}
