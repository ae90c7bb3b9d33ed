package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/internal/localcluster"
	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/parquetx"
)

// localFooter reads a file's footer from disk, the reference stat is
// checked against.
func localFooter(t *testing.T, path string) (origin.Info, *parquetx.Footer) {
	t.Helper()
	store, err := origin.NewFileStore(origin.FileConfig{Root: filepath.Dir(path)})
	if err != nil {
		t.Fatal(err)
	}
	info, err := store.Stat(context.Background(), fileURI(path))
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquetx.ReadObjectFooter(context.Background(), store, info)
	if err != nil {
		t.Fatal(err)
	}
	return info, f
}

// TestStat: stat through a node reports the file's size, version and
// mtime, and the row groups (and with --columns the column chunks) of
// its footer, as parquetx reads them from disk.
func TestStat(t *testing.T) {
	c := liveCluster(t)
	withEnv(t, nil)
	ds, _ := liveDataset(t, c, "stat", 3)
	path := ds.Files[0]
	uri := fileURI(path)
	info, footer := localFooter(t, path)
	node := c.Nodes[1].GRPCAddr()

	r := mustRun(t, "stat", "--node", node, uri)
	t.Logf("stat:\n%s", r.stdout)
	for _, frag := range []string{
		"uri        " + uri,
		"size       " + strconv.FormatInt(info.Size, 10) + " (",
		"version    " + info.Version,
		"mtime      " + info.ModTime.UTC().Format("2006-01-02T15:04:05"),
		"parquet    3 row groups, 3000 rows",
	} {
		if !strings.Contains(r.stdout, frag) {
			t.Errorf("stat lacks %q", frag)
		}
	}
	for _, rg := range footer.RowGroups {
		re := `(?m)^` + strconv.Itoa(rg.Index) + `\s+` + strconv.FormatInt(rg.Offset, 10) + `\s+` + strconv.FormatInt(rg.Length, 10) + `\s+[0-9.]+ [KMG]?i?B\s+` + strconv.FormatInt(rg.NumRows, 10) + `$`
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("no line for row group %+v (%s)", rg, re)
		}
	}

	js := mustRun(t, "stat", uri, "--node", node, "--columns", "--json") // flags after the URI too
	var got statJSON
	if err := json.Unmarshal([]byte(js.stdout), &got); err != nil {
		t.Fatalf("stat --json: %v\n%s", err, js.stdout)
	}
	if got.URI != uri || got.Size != info.Size || got.Version != info.Version || !got.Parquet || got.NumRows != footer.NumRows ||
		got.ModTime == nil || !got.ModTime.Equal(info.ModTime) || len(got.RowGroups) != len(footer.RowGroups) {
		t.Fatalf("stat --json %+v, want %+v with %d row groups", got, info, len(footer.RowGroups))
	}
	for i, rg := range footer.RowGroups {
		g := got.RowGroups[i]
		if g.Index != rg.Index || g.Offset != rg.Offset || g.Length != rg.Length || g.NumRows != rg.NumRows || len(g.Columns) != len(rg.Columns) {
			t.Errorf("row group %d: %+v, want %+v", i, g, rg)
			continue
		}
		for j, col := range rg.Columns {
			if g.Columns[j] != (columnJSON{Path: col.Path, Offset: col.Offset, Length: col.Length}) {
				t.Errorf("row group %d column %d: %+v, want %+v", i, j, g.Columns[j], col)
			}
		}
	}
	cols := mustRun(t, "stat", "--node", node, "--columns", uri)
	if !regexp.MustCompile(`(?m)^\s+payload\s+\d+\s+\d+\s+`).MatchString(cols.stdout) {
		t.Errorf("stat --columns lists no payload chunk:\n%s", cols.stdout)
	}

	// Not Parquet.
	txt := filepath.Join(ds.Dir, "notes.txt")
	if err := os.WriteFile(txt, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := mustRun(t, "stat", "--node", node, fileURI(txt))
	if !strings.Contains(plain.stdout, "size       5 (5 B)") || !strings.Contains(plain.stdout, "parquet    no") {
		t.Errorf("stat of a text file:\n%s", plain.stdout)
	}

	// Errors: exit 1, one line.
	for _, tc := range []struct{ uri, node, want string }{
		{fileURI(filepath.Join(c.DataRoot, "missing.parquet")), node, "no such object"},
		{"file:///etc/hostname", node, "outside the file root"},
		{uri, "127.0.0.1:1", "cannot reach the cache node at 127.0.0.1:1"},
	} {
		r := locusctl(t, "stat", "--node", tc.node, tc.uri)
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("stat %s via %s: %v; want exit 1 and one line with %q", tc.uri, tc.node, r, tc.want)
		}
	}
}

// TestStatMTLS: a node that requires client certificates answers stat
// with --tls-ca, --tls-cert and --tls-key (also from LOCUS_TLS_*), and
// refuses it without them.
func TestStatMTLS(t *testing.T) {
	dir := t.TempDir()
	ds, err := localcluster.WriteDataset(context.Background(), dir, localcluster.DatasetSpec{RowGroups: 2, Rows: 200})
	if err != nil {
		t.Fatal(err)
	}
	store, err := origin.NewFileStore(origin.FileConfig{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	files := nodetest.NewTLS(t)
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: store, TLS: files, MTLS: true})
	addr := c.Nodes[0].GRPCAddr()
	uri := fileURI(ds.Files[0])
	withEnv(t, nil)

	r := mustRun(t, "stat", "--node", addr, "--tls-ca", files.CAFile, "--tls-cert", files.CertFile, "--tls-key", files.KeyFile, uri)
	if !strings.Contains(r.stdout, "parquet    2 row groups, 200 rows") {
		t.Errorf("stat over mTLS:\n%s", r.stdout)
	}
	withEnv(t, map[string]string{"LOCUS_NODE": addr, "LOCUS_TLS_CA": files.CAFile, "LOCUS_TLS_CERT": files.CertFile, "LOCUS_TLS_KEY": files.KeyFile})
	if env := mustRun(t, "stat", uri); env.stdout != r.stdout {
		t.Errorf("with LOCUS_NODE and LOCUS_TLS_*:\n%s\nwant:\n%s", env.stdout, r.stdout)
	}
	withEnv(t, nil)
	for _, args := range [][]string{
		{"stat", "--node", addr, uri},                             // plaintext to a TLS node
		{"stat", "--node", addr, "--tls-ca", files.CAFile, uri},   // no client certificate
		{"stat", "--node", addr, "--tls-ca", files.CertFile, uri}, // not the CA
	} {
		if r := locusctl(t, args...); r.code != 1 || !strings.Contains(r.stderr, "cannot reach the cache node") {
			t.Errorf("locusctl %q: %v; want exit 1, cannot reach", args, r)
		}
	}
}

func TestStatBadArguments(t *testing.T) {
	checkBadArgs(t, []badArgs{
		{[]string{"stat", "--node", "127.0.0.1:1"}, "missing URI"},
		{[]string{"stat", "s3://bkt/k"}, "missing --node"},
		{[]string{"stat", "--node", "127.0.0.1", "s3://bkt/k"}, `--node "127.0.0.1": want host:port`},
		{[]string{"stat", "--node", "http://127.0.0.1:7070", "s3://bkt/k"}, "want host:port"},
		{[]string{"stat", "--node", "127.0.0.1:1", "s3://bkt/k", "s3://bkt/j"}, "one URI at a time"},
		{[]string{"stat", "--node", "127.0.0.1:1", "gs://bkt/k"}, "unsupported URI scheme"},
		{[]string{"stat", "--node", "127.0.0.1:1", "s3://bkt/dir/"}, "names a prefix"},
		{[]string{"stat", "--node", "127.0.0.1:1", "s3://bkt/k", "--timeout", "-1s"}, "--timeout must be positive"},
		{[]string{"stat", "--node", "127.0.0.1:1", "s3://bkt/k", "--tls-key", "k.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"stat", "--node", "127.0.0.1:1", "s3://bkt/k", "--tls-cert", "/nonexistent.pem", "--tls-key", "/nonexistent-key.pem"}, "--tls-cert /nonexistent.pem"},
	})
	h := locusctl(t, "stat", "--help")
	if h.code != 0 || !strings.Contains(h.stdout, "--tls-ca") || !strings.Contains(h.stdout, "Examples:") || h.stderr != "" {
		t.Errorf("stat --help: %v", h)
	}
}

// TestNodeErrorNamesTheOrigin: a node that answers UNAVAILABLE because its
// origin failed is not reported as a node that cannot be reached.
func TestNodeErrorNamesTheOrigin(t *testing.T) {
	originDown := fmt.Errorf("%w: 127.0.0.5:7070: %w", client.ErrNodeUnavailable,
		status.Error(codes.Unavailable, "origin: store unavailable: s3 HEAD: connection refused"))
	if got := nodeError("127.0.0.5:7070", "stat", originDown).Error(); !strings.Contains(got, "could not read the origin: origin: store unavailable") || strings.Contains(got, "cannot reach the cache node") {
		t.Errorf("origin down: %q", got)
	}
	unreachable := fmt.Errorf("%w: 127.0.0.5:7070: %w", client.ErrNodeUnavailable,
		status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.5:7070: connect: connection refused"`))
	if got := nodeError("127.0.0.5:7070", "stat", unreachable).Error(); !strings.Contains(got, "cannot reach the cache node at 127.0.0.5:7070") {
		t.Errorf("node down: %q", got)
	}
}
