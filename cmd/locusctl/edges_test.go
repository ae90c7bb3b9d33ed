package main

// Regression and edge-case tests from an adversarial review of locusctl
// (2026-11-30): the operator-visible effect of a parquetx bug, exit codes,
// help, cache-sim trace edge cases, a hung node.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"github.com/locuscache/locus/internal/testproc"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// noEnv makes the tests independent of LOCUS_* variables around them.
func noEnv(t *testing.T) { withEnv(t, map[string]string{}) }

// TestPlanEmptyFile is a regression test (it failed before its fix) of the operator's
// view of the parquetx bug TestEmptyTableFile pins down.
//
// What was wrong: a dataset directory holding one normal file and one
// empty file (0 rows, written by arrow-go's pqarrow.WriteTable: an empty
// partition) makes `locusctl plan` warn "skipping ...: corrupt Parquet
// footer" and exit 1, so scripts treat a healthy dataset as broken
// (`locusctl warm` does the same).
//
// Expected: exit 0, the normal file's splits printed, nothing for the
// empty file.
//
// Root cause (before the fix): pkg/parquetx/footer.go:279 (buildFooter rejects the column
// chunks of the 0-row row group, which arrow-go records with
// data_page_offset 0: here "[0, 0+14)").
//
// Fix (applied): see TestEmptyTableFile in pkg/parquetx.
func TestPlanEmptyFile(t *testing.T) {
	noEnv(t)
	dir := t.TempDir()
	ds := dataset(t, dir)
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
	rec := b.NewRecordBatch()
	b.Release()
	tbl := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	rec.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 1000, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ds.Dir, "part-empty.parquet"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := plan(t, fileURI(ds.Dir)+"/", "--nodes", "3", "--json")
	if err != nil {
		t.Fatalf("plan of a dataset with an empty file: %v\nstderr: %s", err, errOut)
	}
	if n := strings.Count(out, "\n"); n != 8 {
		t.Fatalf("%d splits, want 8:\n%s", n, out)
	}
}

// TestHelpAndFlagsExitCodes: a help request (every command's --help or
// -h, "locusctl help CMD", "locusctl --help") prints the usage on stdout,
// so that "locusctl stat --help | less" shows it, nothing on stderr, and
// exits 0; a usage error (an unknown flag, an unknown command, no command)
// prints on stderr only, naming the problem, and exits 2.
func TestHelpAndFlagsExitCodes(t *testing.T) {
	noEnv(t)
	cmds := [][]string{{"ring", "status"}, {"ring", "simulate"}, {"cache-sim"}, {"plan"}, {"up"},
		{"place"}, {"complete"}, {"jobs"}, {"stat"}, {"warm"}, {"sizing"}}
	type call struct {
		args           []string
		code           int
		stdout, stderr string // substrings of each stream; "" means empty
	}
	var calls []call
	for _, c := range cmds {
		usage := "Usage: locusctl " + strings.Join(c, " ")
		calls = append(calls,
			call{args: append(c, "--help"), stdout: usage},
			call{args: append(c, "-h"), stdout: usage},
			call{args: append(c, "--no-such-flag"), code: 2, stderr: "no-such-flag"})
	}
	calls = append(calls,
		// "locusctl help stat" is "locusctl stat --help" (it printed the
		// top-level usage).
		call{args: []string{"help", "stat"}, stdout: "Usage: locusctl stat"},
		call{args: []string{"--help"}, stdout: "Usage: locusctl <command>"},
		call{args: []string{"-h"}, stdout: "Usage: locusctl <command>"},
		call{args: []string{"help"}, stdout: "Usage: locusctl <command>"},
		call{args: []string{"ring", "--help"}, stdout: "Usage: locusctl ring"},
		call{args: []string{"ring"}, code: 2, stderr: "missing command"},
		call{args: []string{"nope"}, code: 2, stderr: `unknown command "nope"`},
		// It printed the top-level usage on stdout and exited 0.
		call{args: []string{"help", "nope"}, code: 2, stderr: `unknown command "nope"`},
		// Help about help is the top-level usage (a review found these
		// taken for unknown commands).
		call{args: []string{"help", "--help"}, stdout: "Usage: locusctl <command>"},
		call{args: []string{"help", "-h"}, stdout: "Usage: locusctl <command>"},
		call{args: []string{"help", "help"}, stdout: "Usage: locusctl <command>"},
		call{args: nil, code: 2, stderr: "Usage: locusctl <command>"},
	)
	for _, c := range calls {
		var out, errOut bytes.Buffer
		rc := run(c.args, &out, &errOut)
		if rc != c.code {
			t.Errorf("%q: exit %d, want %d; stderr %.200q", c.args, rc, c.code, errOut.String())
		}
		for _, s := range []struct{ name, got, want string }{{"stdout", out.String(), c.stdout}, {"stderr", errOut.String(), c.stderr}} {
			if s.want == "" && s.got != "" || !strings.Contains(s.got, s.want) {
				t.Errorf("%q: %s %.200q, want %q", c.args, s.name, s.got, s.want)
			}
		}
	}
}

// TestCacheSimTraceEdges: trace formats with blank lines, CRLF
// endings, gzip; and the bad inputs an operator hits, each with its exit
// code and a message naming the problem (and the line).
func TestCacheSimTraceEdges(t *testing.T) {
	noEnv(t)
	gz := func(s string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.String()
	}
	tests := []struct {
		name, file, body string
		args             []string
		rc               int
		want             string // in stdout (rc 0) or stderr
	}{
		{"blank lines and CRLF", "t.keys", "1\r\n\r\n2\r\n1\r\n\n", []string{"--capacity", "2", "--policy", "lru"}, 0, "3 accesses, 2 distinct keys"},
		{"lirs star and CRLF", "t.lirs", "5\r\n6\r\n5\r\n*\r\n", []string{"--format", "lirs", "--capacity", "2", "--policy", "lru"}, 0, "3 accesses, 2 distinct keys"},
		{"arc CRLF blank", "t.arc", "100 3 0 0\r\n\r\n100 3 0 1\r\n", []string{"--format", "arc", "--capacity", "3", "--policy", "lru"}, 0, "6 accesses, 3 distinct keys"},
		{"gzip", "t.gz", gz("1\n2\n1\n"), []string{"--capacity", "2", "--policy", "lru"}, 0, "3 accesses, 2 distinct keys"},
		{"max uint64 key", "t.keys", "18446744073709551615\n1\n", []string{"--capacity", "1", "--policy", "lru"}, 0, "2 accesses"},
		{"fraction above 1", "t.keys", "1\n2\n", []string{"--capacity-frac", "1.5", "--policy", "lru"}, 0, "150%"},
		{"comment line", "t.keys", "# header\n1\n", []string{"--capacity", "1"}, 1, "t.keys:1: malformed trace line"},
		{"key over 2^64", "t.keys", "1\n18446744073709551616\n", []string{"--capacity", "1"}, 1, "t.keys:2: malformed trace line"},
		{"negative key", "t.keys", "-3\n", []string{"--capacity", "1"}, 1, "t.keys:1: malformed trace line"},
		{"arc count over the cap", "t.arc", "0 16777217 0 0\n", []string{"--format", "arc", "--capacity", "1"}, 1, "num_blocks 16777217 out of range"},
		{"arc start overflows", "t.arc", "18446744073709551615 2 0 0\n", []string{"--format", "arc", "--capacity", "1"}, 1, "overflows"},
		{"arc negative count", "t.arc", "0 -5 0 0\n", []string{"--format", "arc", "--capacity", "1"}, 1, "num_blocks"},
		{"empty trace", "t.keys", "\n\n", []string{"--capacity", "1"}, 1, "no accesses"},
		{"fraction 0", "t.keys", "1\n", []string{"--capacity-frac", "0"}, 2, "--capacity-frac"},
		{"fraction NaN", "t.keys", "1\n", []string{"--capacity-frac", "NaN"}, 2, "--capacity-frac"},
		{"fraction Inf", "t.keys", "1\n", []string{"--capacity-frac", "+Inf"}, 2, "--capacity-frac"},
		{"fraction negative", "t.keys", "1\n", []string{"--capacity-frac", "-0.1"}, 2, "--capacity-frac"},
		{"capacity 0", "t.keys", "1\n", []string{"--capacity", "0"}, 2, "--capacity"},
		{"capacity and fraction", "t.keys", "1\n", []string{"--capacity", "1", "--capacity-frac", "0.5"}, 2, "exactly one"},
		{"unknown policy", "t.keys", "1\n", []string{"--capacity", "1", "--policy", "lru,fifo"}, 2, `"fifo"`},
		{"unknown format", "t.keys", "1\n", []string{"--capacity", "1", "--format", "csv"}, 2, "--format"},
		{"stray argument", "t.keys", "1\n", []string{"--capacity", "1", "extra"}, 2, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trace := writeTrace(t, tt.file, tt.body)
			var out, errOut bytes.Buffer
			rc := run(append([]string{"cache-sim", "--quiet", "--trace", trace}, tt.args...), &out, &errOut)
			got := errOut.String()
			if tt.rc == 0 {
				got = out.String()
			}
			if rc != tt.rc || !strings.Contains(got, tt.want) {
				t.Fatalf("exit %d (want %d); stdout %q; stderr %q; want %q", rc, tt.rc, out.String(), errOut.String(), tt.want)
			}
			if tt.rc != 0 && out.Len() != 0 {
				t.Fatalf("a failure printed to stdout: %q", out.String())
			}
		})
	}
}

// TestCacheSimJSONDuplicates: duplicate capacities (given twice, or
// two fractions rounding alike) replay once; --json stays one valid JSON
// document on stdout with the note on stderr, and the hit ratios are
// fractions in [0, 1].
func TestCacheSimJSONDuplicates(t *testing.T) {
	noEnv(t)
	trace := writeTrace(t, "t.keys", "1\n2\n3\n1\n2\n3\n4\n")
	var out, errOut bytes.Buffer
	rc := run([]string{"cache-sim", "--quiet", "--trace", trace, "--capacity", "2,2,3", "--policy", "lru,belady,lru", "--json"}, &out, &errOut)
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, errOut.String())
	}
	var rep cacheSimReport
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if dec.More() {
		t.Fatal("more than one JSON document on stdout")
	}
	if len(rep.Results) != 4 || rep.Accesses != 7 || rep.Distinct != 4 {
		t.Fatalf("report %+v; want 2 capacities x 2 policies", rep)
	}
	for _, r := range rep.Results {
		if r.HitRatio < 0 || r.HitRatio > 1 {
			t.Fatalf("hit ratio %v", r.HitRatio)
		}
	}
	if !strings.Contains(errOut.String(), "replayed once") {
		t.Fatalf("no note about the duplicate capacity on stderr: %q", errOut.String())
	}
}

// TestStatHungNode: a node that accepts TCP and never answers does
// not hang `locusctl stat`: --timeout bounds it, exit 1.
func TestStatHungNode(t *testing.T) {
	noEnv(t)
	addr := testproc.Blackhole(t)
	start := time.Now()
	var out, errOut bytes.Buffer
	rc := run([]string{"stat", "--node", addr, "--timeout", "500ms", "s3://bkt/k.parquet"}, &out, &errOut)
	if rc != 1 || time.Since(start) > 10*time.Second {
		t.Fatalf("exit %d after %v: %s", rc, time.Since(start), errOut.String())
	}
}
