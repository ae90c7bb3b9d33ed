package flagenv

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestEnvName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"cache-dir", "LOCUS_CACHE_DIR"},
		{"grpc-addr", "LOCUS_GRPC_ADDR"},
		{"slots", "LOCUS_SLOTS"},
	} {
		if got := EnvName(tc.in); got != tc.want {
			t.Errorf("EnvName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	env := map[string]string{
		"LOCUS_CACHE_DIR":     "/from/env",
		"LOCUS_SLOTS":         "7",
		"LOCUS_LOCALITY_WAIT": "250ms",
		"LOCUS_RACK":          "env-rack",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		name      string
		args      []string
		wantDir   string
		wantSlots int
		wantRack  string
	}{
		{"env fills unset flags", nil, "/from/env", 7, "env-rack"},
		{"flags win over env", []string{"--cache-dir=/flag", "--rack", "r9"}, "/flag", 7, "r9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			dir := fs.String("cache-dir", "", "")
			slots := fs.Int("slots", 1, "")
			rack := fs.String("rack", "", "")
			wait := fs.Duration("locality-wait", time.Second, "")
			if err := Parse(fs, tc.args, lookup); err != nil {
				t.Fatal(err)
			}
			if *dir != tc.wantDir || *slots != tc.wantSlots || *rack != tc.wantRack || *wait != 250*time.Millisecond {
				t.Errorf("got dir=%q slots=%d rack=%q wait=%v, want %q %d %q 250ms", *dir, *slots, *rack, *wait, tc.wantDir, tc.wantSlots, tc.wantRack)
			}
		})
	}
}

func TestParseBadEnv(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Int("slots", 1, "")
	err := Parse(fs, nil, func(k string) (string, bool) { return "many", k == "LOCUS_SLOTS" })
	if err == nil || !strings.Contains(err.Error(), "LOCUS_SLOTS") {
		t.Fatalf("got %v, want an error naming LOCUS_SLOTS", err)
	}
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"default"}},
		{[]string{"--join=a:1, b:2,,c:3 "}, []string{"a:1", "b:2", "c:3"}},
		{[]string{"--join=a", "--join=b,c"}, []string{"b", "c"}}, // each Set replaces
		{[]string{"--join="}, nil},
		{[]string{"--join= , "}, nil},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		got := []string{"default"}
		fs.Var(List(&got), "join", "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || (tc.want == nil) != (got == nil) {
			t.Errorf("%v: got %q, want %q", tc.args, got, tc.want)
		}
		if s := fs.Lookup("join").Value.String(); s != strings.Join(tc.want, ",") {
			t.Errorf("%v: String() = %q, want %q", tc.args, s, strings.Join(tc.want, ","))
		}
	}
	if s := List(nil).String(); s != "" {
		t.Errorf("zero List String() = %q", s)
	}
}
