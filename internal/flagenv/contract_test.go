package flagenv

// Regression and contract tests from an adversarial review of the LOCUS_*
// environment contract (2026-11-30; DESIGN.md "Network contracts": every
// flag is also a LOCUS_* variable).

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// TestUsageSaysWhichWins: --help tells the operator that each flag
// "can also be set by the environment variable shown" but not which one
// wins when both are given. The command line wins (Parse, flagenv.go:23-46,
// and TestExplicitFlagWins), but that is written only in this
// internal package's doc (doc.go); neither --help (Usage, flagenv.go:54)
// nor the README:68 ("Every flag is also an environment variable") says it,
// so an operator whose Helm chart sets LOCUS_SLOTS and whose container
// args set --slots cannot learn which applies without reading the code.
//
// Fix suggested (the code has the one applied): one phrase in Usage's header, e.g. "Flags (each can also
// be set by the environment variable shown; a flag on the command line
// wins over its variable):", and the same in the README.
func TestUsageSaysWhichWins(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.Int("slots", 4, "executor slots")
	Usage(fs, "x: a daemon.")()
	help := strings.ToLower(out.String())
	if !strings.Contains(help, "command line") && !strings.Contains(help, "wins") && !strings.Contains(help, "precedence") &&
		!strings.Contains(help, "overrides") {
		t.Errorf("--help does not say whether a flag or its LOCUS_* variable wins when both are set:\n%s", out.String())
	}
}

// TestExplicitFlagWins: a flag given on the command line wins over
// its variable even when its value equals the default (--slots=4 with
// LOCUS_SLOTS=7 is 4) or is false for a bool (--origin-s3-path-style=false
// with LOCUS_ORIGIN_S3_PATH_STYLE=true is false); a variable set to the
// empty string sets an empty value (a List flag: none), and one for a flag
// that does not exist is ignored.
func TestExplicitFlagWins(t *testing.T) {
	env := map[string]string{
		"LOCUS_SLOTS":                "7",
		"LOCUS_ORIGIN_S3_PATH_STYLE": "true",
		"LOCUS_JOIN":                 "",
		"LOCUS_NO_SUCH_FLAG":         "x",
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	slots := fs.Int("slots", 4, "")
	pathStyle := fs.Bool("origin-s3-path-style", false, "")
	join := []string{"seed:1"}
	fs.Var(List(&join), "join", "")
	err := Parse(fs, []string{"--slots=4", "--origin-s3-path-style=false"}, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if *slots != 4 || *pathStyle || join != nil {
		t.Errorf("slots %d, path style %v, join %q; want 4 (command line), false (command line), none (LOCUS_JOIN empty)", *slots, *pathStyle, join)
	}
}
