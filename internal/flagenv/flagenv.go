package flagenv

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Prefix is the environment prefix of every Locus flag.
const Prefix = "LOCUS_"

// EnvName returns the environment variable that sets the flag name:
// "cache-dir" → "LOCUS_CACHE_DIR".
func EnvName(name string) string {
	return Prefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// CommandLineOnly names the flags no environment variable sets: --version
// (LOCUS_VERSION is a common variable in container images, holding a
// version string, and must not make a daemon print its version and exit).
var CommandLineOnly = map[string]bool{"version": true}

// Parse parses args into fs, then sets every flag that was not given on the
// command line from its LOCUS_* environment variable, if set (the command
// line wins; CommandLineOnly flags take no variable). lookup is
// os.LookupEnv in production and a map in tests. An environment value the
// flag cannot parse is an error naming the variable.
func Parse(fs *flag.FlagSet, args []string, lookup func(string) (string, bool)) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	return Fill(fs, lookup)
}

// Fill sets every flag of fs not set so far (by fs.Parse) from its LOCUS_*
// environment variable, if set, except the CommandLineOnly flags and the
// flags named in except (a flag whose variable would mean something else
// to another command of the same program). An environment value the flag
// cannot parse is an error naming the variable.
func Fill(fs *flag.FlagSet, lookup func(string) (string, bool), except ...string) error {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, name := range except {
		given[name] = true
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] || CommandLineOnly[f.Name] {
			return
		}
		v, ok := lookup(EnvName(f.Name))
		if !ok {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("environment variable %s=%q: %v", EnvName(f.Name), v, e)
		}
	})
	return err
}

// ParseHelp runs parse, which parses into fs (fs.Parse, Parse, or a loop
// of them), with fs's output captured, and sends what the flag package
// printed where an operator expects it. After --help or -h (parse returned
// flag.ErrHelp) the usage text fs.Usage printed goes to stdout and
// ParseHelp returns flag.ErrHelp, so that "cachenode --help | less" shows
// it and the caller exits 0. For any other error nothing is printed: the
// flag package's message and usage dump are dropped and the error is
// returned for the caller to report on stderr as one line naming the
// command (the daemons' and locusctl's convention, so that a Kubernetes
// event or a terminal shows the whole reason). fs's output is restored
// before ParseHelp returns. A failed write to stdout (a closed pipe) is
// ignored: the help was asked for and the exit code stays 0.
func ParseHelp(fs *flag.FlagSet, stdout io.Writer, parse func() error) error {
	var buf bytes.Buffer
	saved := fs.Output()
	fs.SetOutput(&buf)
	defer fs.SetOutput(saved)
	err := parse()
	if errors.Is(err, flag.ErrHelp) {
		_, _ = stdout.Write(buf.Bytes()) // a closed pipe: see above
	}
	return err
}

// Usage returns a flag.FlagSet Usage function that prints summary, then the
// flags with their environment variable names.
func Usage(fs *flag.FlagSet, summary string) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintln(w, strings.TrimSpace(summary))
		fmt.Fprintln(w, "\nFlags (each can also be set by the environment variable shown; the command line wins):")
		fs.VisitAll(func(f *flag.Flag) {
			name, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(w, "  --%s", f.Name)
			if name != "" {
				fmt.Fprintf(w, " %s", name)
			}
			if CommandLineOnly[f.Name] {
				fmt.Fprintln(w)
			} else {
				fmt.Fprintf(w, "   [%s]\n", EnvName(f.Name))
			}
			fmt.Fprintf(w, "        %s", strings.ReplaceAll(usage, "\n", "\n        "))
			if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
				fmt.Fprintf(w, " (default %s)", f.DefValue)
			}
			fmt.Fprintln(w)
		})
	}
}

// List returns a flag.Value that stores a comma-separated list in *p:
// "a, b,,c" sets [a b c] (white space trimmed, empty items dropped, nil
// for none). Each Set replaces the list, so an environment variable or a
// later flag does not add to an earlier one.
func List(p *[]string) flag.Value { return listValue{p} }

type listValue struct{ p *[]string }

func (f listValue) String() string {
	if f.p == nil {
		return ""
	}
	return strings.Join(*f.p, ",")
}

func (f listValue) Set(s string) error {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	*f.p = out
	return nil
}
