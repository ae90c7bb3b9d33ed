package daemonmain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		code     int
		ok       bool
		stdout   string // a substring of what Parse printed on stdout ("" for nothing)
		stderr   string // a substring of what Parse printed on stderr ("" for nothing)
		oneLine  bool   // the output is one line
		wantJSON bool   // the logger writes JSON
	}{
		{"defaults", nil, nil, 0, true, "", "", false, false},
		{"help", []string{"--help"}, nil, ExitOK, false, "LOCUS_LOG_LEVEL", "", false, false},
		{"-h", []string{"-h"}, nil, ExitOK, false, "x: a test daemon.", "", false, false},
		{"unknown flag", []string{"--nope"}, nil, ExitUsage, false, "", "x: flag provided but not defined: -nope (see --help)", true, false},
		{"bad value", []string{"--slots=many"}, nil, ExitUsage, false, "", "slots", true, false},
		{"bad env", nil, map[string]string{"LOCUS_SLOTS": "many"}, ExitUsage, false, "", "LOCUS_SLOTS", true, false},
		{"positional", []string{"extra"}, nil, ExitUsage, false, "", `x: unexpected arguments ["extra"]`, true, false},
		{"bad log level", []string{"--log-level=loud"}, nil, ExitUsage, false, "", `x: --log-level "loud"`, true, false},
		{"bad log format", nil, map[string]string{"LOCUS_LOG_FORMAT": "xml"}, ExitUsage, false, "", `x: --log-format "xml"`, true, false},
		{"json from env", nil, map[string]string{"LOCUS_LOG_FORMAT": "json"}, 0, true, "", "", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			var log LogFlags
			fs := NewFlagSet("x", "x: a test daemon.", &stderr, &log)
			fs.Int("slots", 1, "slots")
			d, code, ok := Parse(fs, tc.args, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }, &log, &stdout)
			out := stderr.String()
			if code != tc.code || ok != tc.ok || (d != nil) != tc.ok {
				t.Fatalf("Parse = %v, %d, %v; want code %d ok %v\n%s", d, code, ok, tc.code, tc.ok, out)
			}
			if got := stdout.String(); tc.stdout == "" && got != "" || !strings.Contains(got, tc.stdout) {
				t.Errorf("stdout %q, want it to hold %q", got, tc.stdout)
			}
			if tc.stderr == "" && out != "" || !strings.Contains(out, tc.stderr) {
				t.Errorf("stderr %q, want it to hold %q", out, tc.stderr)
			}
			if tc.oneLine && strings.Count(out, "\n") != 1 {
				t.Errorf("stderr has %d lines, want one:\n%s", strings.Count(out, "\n"), out)
			}
			if !ok {
				return
			}
			if d.Name != "x" || d.Stderr != &stderr {
				t.Errorf("Daemon %+v, want name x writing to the flag set's output", d)
			}
			d.Log.Info("hello", "k", "v")
			line := stderr.String()
			if got := json.Valid([]byte(line)); got != tc.wantJSON {
				t.Errorf("log line %q: JSON %v, want %v", line, got, tc.wantJSON)
			}
			d.Log.Debug("hidden")
			if strings.Contains(stderr.String(), "hidden") {
				t.Error("debug logged at the default level info")
			}
		})
	}
}

func TestLogFlags(t *testing.T) {
	for _, tc := range []struct {
		l  LogFlags
		ok bool
	}{
		{LogFlags{"debug", "text"}, true},
		{LogFlags{"WARN", "json"}, true},
		{LogFlags{"error", "json"}, true},
		{LogFlags{"", "text"}, false},
		{LogFlags{"info", ""}, false},
	} {
		l, err := tc.l.Logger(&bytes.Buffer{})
		if (err == nil) != tc.ok || (l != nil) != tc.ok {
			t.Errorf("%+v: %v, %v; want ok %v", tc.l, l, err, tc.ok)
		}
	}
}

func TestFail(t *testing.T) {
	var stderr bytes.Buffer
	d := &Daemon{Name: "x", Stderr: &stderr}
	if code := d.Fail(ExitFailure, errors.New("x: cannot bind\n127.0.0.1:1: in use")); code != ExitFailure {
		t.Errorf("Fail returned %d, want %d", code, ExitFailure)
	}
	if got, want := stderr.String(), "x: cannot bind 127.0.0.1:1: in use\n"; got != want {
		t.Errorf("Fail wrote %q, want %q", got, want)
	}
}

func TestSignalContext(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		ctx, stop := SignalContext(context.Background())
		if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Errorf("%v did not end the context", sig)
		}
		stop()
	}
}

// TestVersion: --version prints the daemon's name and build version on one
// line and exits 0 without starting anything.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	var log LogFlags
	fs := NewFlagSet("demo", "a daemon", &out, &log)
	var stderr bytes.Buffer
	fs.SetOutput(&stderr)
	d, code, ok := Parse(fs, []string{"--version"}, func(string) (string, bool) { return "", false }, &log, &out)
	if d != nil || ok || code != ExitOK {
		t.Fatalf("Parse(--version) = %v, %d, %v; want nil, ExitOK, false", d, code, ok)
	}
	if got := out.String(); !strings.HasPrefix(got, "demo ") || !strings.Contains(got, "go1.") || strings.Count(got, "\n") != 1 {
		t.Fatalf("--version printed %q on stdout; want one line: the name, the version and the Go version", got)
	}
	if stderr.Len() != 0 {
		t.Fatalf("--version wrote %q on stderr; want nothing", stderr.String())
	}
}
