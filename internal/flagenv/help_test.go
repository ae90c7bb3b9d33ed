package flagenv

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestParseHelp: --help and -h print the usage on stdout and return
// flag.ErrHelp; a bad flag, value or environment variable prints nothing
// (the caller reports the returned error on one line); fs's own output
// receives nothing and is restored.
func TestParseHelp(t *testing.T) {
	env := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) { return v, v != "" && k == "LOCUS_SLOTS" }
	}
	for _, tc := range []struct {
		name    string
		args    []string
		env     string
		wantErr error  // nil, flag.ErrHelp, or errAny for another error
		errHas  string // a substring of the error
		stdout  string // a substring of stdout ("" for nothing)
	}{
		{"no flags", nil, "", nil, "", ""},
		{"flags", []string{"--slots=3"}, "", nil, "", ""},
		{"--help", []string{"--help"}, "", flag.ErrHelp, "", "LOCUS_SLOTS"},
		{"-h", []string{"-h"}, "", flag.ErrHelp, "", "a test command"},
		{"help after a flag", []string{"--slots=3", "-help"}, "", flag.ErrHelp, "", "--slots"},
		{"unknown flag", []string{"--nope"}, "", errAny, "flag provided but not defined: -nope", ""},
		{"bad value", []string{"--slots=many"}, "", errAny, "invalid value", ""},
		{"bad environment", nil, "many", errAny, "LOCUS_SLOTS", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var own, stdout bytes.Buffer
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(&own)
			fs.Int("slots", 1, "executor slots")
			fs.Usage = Usage(fs, "x: a test command.")
			err := ParseHelp(fs, &stdout, func() error { return Parse(fs, tc.args, env(tc.env)) })
			switch {
			case tc.wantErr == nil && err != nil,
				tc.wantErr == flag.ErrHelp && !errors.Is(err, flag.ErrHelp),
				tc.wantErr == errAny && (err == nil || errors.Is(err, flag.ErrHelp) || !strings.Contains(err.Error(), tc.errHas)):
				t.Fatalf("got error %v, want %v %q", err, tc.wantErr, tc.errHas)
			}
			if got := stdout.String(); tc.stdout == "" && got != "" || !strings.Contains(got, tc.stdout) {
				t.Errorf("stdout %q, want it to hold %q", got, tc.stdout)
			}
			if own.Len() != 0 {
				t.Errorf("the flag set's own output got %q, want nothing", own.String())
			}
			if fs.Output() != &own {
				t.Errorf("the flag set's output was not restored")
			}
		})
	}
}

// errAny stands for any error other than flag.ErrHelp in TestParseHelp.
var errAny = errors.New("any error but flag.ErrHelp")

// TestParseHelpLoop: parse may be a loop of fs.Parse calls (flags after a
// positional argument, as locusctl does); a --help found in a later call
// still lands on stdout, once.
func TestParseHelpLoop(t *testing.T) {
	var stdout bytes.Buffer
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Bool("json", false, "")
	fs.Usage = func() { fs.Output().Write([]byte("Usage: x [--json] URI\n")) }
	err := ParseHelp(fs, &stdout, func() error {
		err := fs.Parse([]string{"--json", "s3://b/k", "--help"})
		for err == nil && fs.NArg() > 0 {
			err = fs.Parse(fs.Args()[1:])
		}
		return err
	})
	if !errors.Is(err, flag.ErrHelp) || stdout.String() != "Usage: x [--json] URI\n" {
		t.Errorf("got %v, stdout %q; want flag.ErrHelp and the usage once", err, stdout.String())
	}
}
