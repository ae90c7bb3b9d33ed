package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"strings"
	"testing"
)

func TestRingDispatch(t *testing.T) {
	// A help request prints the usage on stdout; a usage error on stderr.
	tests := []struct {
		args    []string
		wantErr error
		usage   string
	}{
		{nil, errUsage, "simulate"},
		{[]string{"--help"}, flag.ErrHelp, "simulate"},
		{[]string{"help"}, flag.ErrHelp, "simulate"},
		{[]string{"frobnicate"}, errUsage, "simulate"},
		{[]string{"simulate", "--help"}, flag.ErrHelp, "what moves if I add 4"},
		{[]string{"simulate", "-h"}, flag.ErrHelp, "capacity-planning tool"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		err := runRing(tt.args, &stdout, &stderr)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("runRing(%q): error %v, want %v", tt.args, err, tt.wantErr)
		}
		got, other := stderr.String(), stdout.String()
		if tt.wantErr == flag.ErrHelp {
			got, other = other, got
		}
		if !strings.Contains(got, tt.usage) || other != "" {
			t.Errorf("runRing(%q): stdout %q, stderr %q; want the usage (mentioning %q) on %s only", tt.args, stdout.String(), stderr.String(), tt.usage, map[bool]string{true: "stdout", false: "stderr"}[tt.wantErr == flag.ErrHelp])
		}
	}
}

func TestRingSimulateBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"--nodes", "0"},
		{"--nodes", "-3"},
		{"--nodes", "70000"},
		{"--nodes", "5", "--remove", "5"},
		{"--nodes", "5", "--remove", "6"},
		{"--remove", "-1"},
		{"--add", "-1"},
		{"--keys", "0"},
		{"--keys", "-10"},
		{"--vnodes", "0"},
		{"--vnodes", "-1"},
		{"--vnodes", "100000000"},
		{"--racks", "-2"},
		{"--replicas", "0"},
		{"--nodes", "many"},
		{"--bogus"},
		{"extra"},
	} {
		var stdout, stderr bytes.Buffer
		err := runRing(append([]string{"simulate"}, args...), &stdout, &stderr)
		if !errors.Is(err, errUsage) {
			t.Errorf("ring simulate %q: error %v, want a usage error", args, err)
		}
		if stdout.Len() != 0 {
			t.Errorf("ring simulate %q printed to stdout: %q", args, stdout.String())
		}
	}
	// Through the dispatcher: exit status 2 and a message naming the flag.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"ring", "simulate", "--nodes", "0"}, &stdout, &stderr); code != 2 {
		t.Errorf("locusctl ring simulate --nodes 0: exit %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "--nodes") {
		t.Errorf("error message %q does not name --nodes", stderr.String())
	}
}

func simulateJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := runRing(append([]string{"simulate", "--json"}, args...), &stdout, &stderr); err != nil {
		t.Fatalf("ring simulate %q: %v (stderr %q)", args, err, stderr.String())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("ring simulate %q: output is not one JSON object: %v\n%s", args, err, stdout.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("ring simulate %q: a short run wrote to stderr: %q", args, stderr.String())
	}
	return out
}

func TestRingSimulateJSON(t *testing.T) {
	out := simulateJSON(t, "--nodes", "40", "--vnodes", "256", "--keys", "50000", "--add", "4")
	for _, k := range []string{"nodes", "keys", "cov", "max_over_mean", "moved_fraction", "ideal_moved_fraction", "lookup_ns"} {
		if _, ok := out[k]; !ok {
			t.Errorf("JSON output lacks %q", k)
		}
	}
	num := func(k string) float64 { f, _ := out[k].(float64); return f }
	if num("nodes") != 40 || num("nodes_after") != 44 || num("keys") != 50000 || num("add") != 4 {
		t.Errorf("nodes/nodes_after/keys/add = %v/%v/%v/%v, want 40/44/50000/4", num("nodes"), num("nodes_after"), num("keys"), num("add"))
	}
	if got, want := num("ideal_moved_fraction"), 4.0/44; math.Abs(got-want) > 1e-12 {
		t.Errorf("ideal_moved_fraction = %v, want %v", got, want)
	}
	if got := num("moved_fraction"); math.Abs(got/num("ideal_moved_fraction")-1) > 0.2 {
		t.Errorf("moved_fraction = %v, far from ideal %v", got, num("ideal_moved_fraction"))
	}
	if num("needless_moves") != 0 {
		t.Errorf("needless_moves = %v, want 0: only keys to the new nodes may move", num("needless_moves"))
	}
	if c := num("cov"); c <= 0 || c > 0.1 {
		t.Errorf("cov = %v, want a small positive number", c)
	}
	if m := num("max_over_mean"); m < 1 || m > 1.2 {
		t.Errorf("max_over_mean = %v, want in [1, 1.2]", m)
	}
	if num("lookup_ns") <= 0 || num("points") != 40*256 || num("ring_bytes") <= 0 {
		t.Errorf("lookup_ns/points/ring_bytes = %v/%v/%v", num("lookup_ns"), num("points"), num("ring_bytes"))
	}
	if _, ok := out["plain_rack_spread"]; ok {
		t.Errorf("rack statistics reported without --racks")
	}
}

func TestRingSimulateDefaultsAndRemove(t *testing.T) {
	out := simulateJSON(t, "--keys", "20000", "--vnodes", "64")
	if out["nodes"] != 100.0 || out["add"] != 1.0 || out["remove"] != 0.0 || out["racks"] != 0.0 {
		t.Errorf("defaults: nodes %v add %v remove %v racks %v, want 100 1 0 0", out["nodes"], out["add"], out["remove"], out["racks"])
	}
	// --remove alone: no implicit --add.
	out = simulateJSON(t, "--nodes", "10", "--remove", "2", "--keys", "20000", "--vnodes", "64")
	if out["add"] != 0.0 || out["nodes_after"] != 8.0 || out["ideal_moved_fraction"] != 0.2 {
		t.Errorf("--remove 2 of 10: add %v nodes_after %v ideal %v, want 0 8 0.2", out["add"], out["nodes_after"], out["ideal_moved_fraction"])
	}
	if out["needless_moves"] != 0.0 {
		t.Errorf("needless_moves = %v on removal, want 0", out["needless_moves"])
	}
	// Explicit --add 0: no change at all.
	out = simulateJSON(t, "--nodes", "10", "--add", "0", "--keys", "1000", "--vnodes", "16")
	if out["moved_fraction"] != 0.0 || out["ideal_moved_fraction"] != 0.0 {
		t.Errorf("no change moved %v (ideal %v), want 0", out["moved_fraction"], out["ideal_moved_fraction"])
	}
}

func TestRingSimulateRacks(t *testing.T) {
	out := simulateJSON(t, "--nodes", "12", "--racks", "4", "--keys", "5000", "--vnodes", "64")
	if out["rack_aware_rack_spread"] != 1.0 {
		t.Errorf("rack_aware_rack_spread = %v, want 1 with 4 racks and 3 replicas", out["rack_aware_rack_spread"])
	}
	if p, _ := out["plain_rack_spread"].(float64); p <= 0 || p >= 1 {
		t.Errorf("plain_rack_spread = %v, want strictly between 0 and 1", out["plain_rack_spread"])
	}
}

func TestRingSimulateText(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := runRing([]string{"simulate", "--nodes", "8", "--add", "2", "--remove", "1", "--racks", "2", "--keys", "3000", "--vnodes", "32"}, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"8 -> 9 nodes (+2 -1)", "CoV", "max/mean", "moved", "ideal", "lookup", "build time", "rack-aware"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, stdout.String())
		}
	}
}

func TestRingSimulateProgress(t *testing.T) {
	var stderr bytes.Buffer
	p := simParams{nodes: 10, vnodes: 16, keys: 300_000, add: 1, replicas: 3, racks: 2}
	if _, err := simulate(p, newProgress(&stderr, "ring simulate", 0)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "ring simulate: [") {
		t.Errorf("no progress on stderr with a zero threshold: %q", stderr.String())
	}
}

func TestIdealMoved(t *testing.T) {
	for _, c := range []struct {
		n, add, remove int
		want           float64
	}{
		{100, 1, 0, 1.0 / 101},
		{96, 4, 0, 0.04},
		{10, 0, 2, 0.2},
		{10, 2, 2, 0.2}, // replace two: their keys move, to the newcomers
		{10, 0, 0, 0},
		{4, 4, 0, 0.5},
	} {
		if got := idealMoved(c.n, c.add, c.remove); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("idealMoved(%d, +%d, -%d) = %v, want %v", c.n, c.add, c.remove, got, c.want)
		}
	}
}
