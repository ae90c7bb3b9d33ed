package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/locuscache/locus/pkg/node/nodetest"
)

// TestHelpOnStdout runs the built daemon: --help prints the usage (and
// --version the version) on stdout (so "cachenode --help | less" shows it) and exits 0; a bad flag is
// one line on stderr, nothing on stdout, exit 2.
func TestHelpOnStdout(t *testing.T) {
	bin := nodetest.BuildCachenode(t)
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string // substrings; "" means empty
	}{
		{[]string{"--help"}, 0, "LOCUS_CACHE_DIR", ""},
		{[]string{"-h"}, 0, "--cache-dir", ""},
		{[]string{"--version"}, 0, "cachenode ", ""},
		{[]string{"--nope"}, 2, "", "cachenode: flag provided but not defined: -nope (see --help)"},
		{[]string{"--slots=many"}, 2, "", "slots"},
	} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, tc.args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d\nstderr: %s", tc.args, code, tc.code, stderr.String())
		}
		for _, s := range []struct{ name, got, want string }{{"stdout", stdout.String(), tc.stdout}, {"stderr", stderr.String(), tc.stderr}} {
			if s.want == "" && s.got != "" || !strings.Contains(s.got, s.want) {
				t.Errorf("%v: %s %.200q, want %q", tc.args, s.name, s.got, s.want)
			}
		}
	}
}
