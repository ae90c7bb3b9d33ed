package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/localcluster"
	"github.com/locuscache/locus/pkg/parquetx"
)

// warmJSON runs locusctl warm --json, requires exit 0, and decodes the
// summary.
func warmJSON(t *testing.T, args ...string) (warmSummary, result) {
	t.Helper()
	r := mustRun(t, append([]string{"warm", "--json"}, args...)...)
	var s warmSummary
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("warm --json: %v\n%s", err, r.stdout)
	}
	return s, r
}

// datasetBytes returns the bytes of every row group of the dataset, and
// of the chosen columns' chunks (parquetx.ChunkRanges per row group), read
// from the files on disk: what warm must read.
func datasetBytes(t *testing.T, ds localcluster.Dataset, columns []string) (rowGroups, chunks int64, splits int) {
	t.Helper()
	for _, path := range ds.Files {
		_, f := localFooter(t, path)
		for _, rg := range f.RowGroups {
			rowGroups += rg.Length
			splits++
			rs, err := parquetx.ChunkRanges(f, []int{rg.Index}, columns, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				chunks += r.Length
			}
		}
	}
	return rowGroups, chunks, splits
}

// checkConsistent checks a summary's byte accounting.
func checkConsistent(t *testing.T, s warmSummary, splits int, planned int64) {
	t.Helper()
	if s.Splits != splits || s.WarmedSplits != splits || s.FailedSplits != 0 || s.PlannedBytes != planned || s.Bytes != planned {
		t.Errorf("summary %+v: want %d splits all warmed, %d bytes planned and read", s, splits, planned)
	}
	if s.OriginBytes+s.CachedBytes != s.Bytes || s.LocalHitBytes+s.PeerHitBytes != s.CachedBytes || s.OwnerUnavailableBytes != 0 {
		t.Errorf("summary %+v: origin + cached must be bytes, local + peer cached, none owner-unavailable", s)
	}
}

// TestWarmScheduler: warm through the scheduler places every row group as
// a task of a warm-* job, reads it on the placed node and completes it:
// the first run fetches (nearly) everything from the origin, the job's
// counters show every task completed with those bytes, and a second run
// finds every byte already cached.
func TestWarmScheduler(t *testing.T) {
	c := liveCluster(t)
	withEnv(t, nil)
	ds, prefix := liveDataset(t, c, "warm-sched", 8)
	planned, _, splits := datasetBytes(t, ds, nil)
	sched := c.SchedulerURL()

	first, r := warmJSON(t, prefix, "--scheduler", sched)
	t.Logf("first warm: %+v", first)
	checkConsistent(t, first, splits, planned)
	if first.Mode != "scheduler" || !strings.HasPrefix(first.Job, "warm-") || first.Objects != 2 || first.WarmedObjects != 2 {
		t.Errorf("first warm %+v: want mode scheduler, a warm-* job, 2 objects warmed", first)
	}
	if first.DataLocal+first.RackLocal+first.OtherLocal != splits || first.DataLocal == 0 {
		t.Errorf("placements %d/%d/%d, want %d in all, some DATA_LOCAL", first.DataLocal, first.RackLocal, first.OtherLocal, splits)
	}
	// Cold: only pages shared by two adjacent row groups can hit.
	if page := int64(localcluster.DefaultPageSize); first.CachedBytes > int64(splits)*page {
		t.Errorf("first warm found %d bytes cached, want at most a page per split (%d): a cold dataset", first.CachedBytes, int64(splits)*page)
	}
	if !strings.Contains(r.stderr, "2/2 objects, 8/8 splits") {
		t.Errorf("no final progress line on stderr: %q", r.stderr)
	}

	jc := jobCounters(t, sched, first.Job)
	if jc.Completed != int64(splits) || jc.Running != 0 || jc.Bytes != planned || jc.MissBytes != first.OriginBytes ||
		jc.LocalHitBytes != first.LocalHitBytes || jc.PeerHitBytes != first.PeerHitBytes || jc.DataLocalTasks != int64(first.DataLocal) {
		t.Errorf("job %s counters %+v do not match the warm summary %+v", first.Job, jc, first)
	}

	// A second warm reads every split again. With replication 1 its task
	// runs on the split's owner, which has it now. With replication R > 1
	// the scheduler may run it on another node of the list, which the
	// first warm did not fill: fill them all first.
	if first.Replication > 1 {
		t.Logf("replication %d: --all-replicas before the second warm", first.Replication)
		mustRun(t, "warm", prefix, "--scheduler", sched, "--all-replicas")
	}
	second, _ := warmJSON(t, prefix, "--scheduler", sched, "--job", "warm-again", "--wait", "1s")
	checkConsistent(t, second, splits, planned)
	if second.OriginBytes != 0 || second.CachedBytes != planned || second.Job != "warm-again" {
		t.Errorf("second warm %+v: want every byte already cached, job warm-again", second)
	}
	third := mustRun(t, "warm", prefix, "--scheduler", sched)
	t.Logf("third warm:\n%s", third.stdout)
	for _, re := range []string{
		`fetched from the origin\s+0 B\s+0\.0%`,
		`already cached\s+[0-9.]+ KiB\s+100\.0%`,
		`placements\s+DATA_LOCAL \d+, RACK_LOCAL \d+, OTHER_LOCAL \d+`,
		`All [0-9.]+ KiB were already cached\.`,
	} {
		if !regexp.MustCompile(re).MatchString(third.stdout) {
			t.Errorf("third warm's summary does not match %s", re)
		}
	}
}

// TestWarmNode: warm through one node fills the owners by peer reads;
// --columns reads exactly the chosen chunks; a later whole warm finds
// those chunks cached, and a warm after that finds everything cached.
func TestWarmNode(t *testing.T) {
	c := liveCluster(t)
	withEnv(t, nil)
	ds, prefix := liveDataset(t, c, "warm-node", 8)
	cols := []string{"id", "kind"}
	planned, colBytes, splits := datasetBytes(t, ds, cols)
	// Read through a node outside the preference list of the first
	// file's first block, so some pages must come from their owners.
	prefs := prefList(t, c.SchedulerURL(), fileURI(ds.Files[0]), 0, 1)
	var node string
	for _, n := range c.Nodes {
		if !slices.Contains(prefs, n.ID()) {
			node = n.GRPCAddr()
		}
	}
	if node == "" {
		t.Skipf("every node is in the preference list %v: no peer reads to test", prefs)
	}

	byCols, _ := warmJSON(t, "--node", node, "--columns", "id,kind", prefix, "--concurrency", "3")
	t.Logf("columns warm: %+v", byCols)
	checkConsistent(t, byCols, splits, colBytes)
	if byCols.Mode != "node" || byCols.Via != node || byCols.Job != "" || byCols.DataLocal != 0 {
		t.Errorf("summary %+v: want mode node via %s, no job, no placements", byCols, node)
	}
	if byCols.OriginBytes == 0 {
		t.Errorf("a cold columns warm fetched nothing from the origin: %+v", byCols)
	}

	whole, _ := warmJSON(t, "--node", node, prefix)
	checkConsistent(t, whole, splits, planned)
	if whole.CachedBytes < colBytes || whole.OriginBytes == 0 {
		t.Errorf("whole warm after the columns: %d bytes cached, %d from the origin; want at least the %d column bytes cached, the rest fetched",
			whole.CachedBytes, whole.OriginBytes, colBytes)
	}
	again, _ := warmJSON(t, "--node", node, prefix)
	if again.OriginBytes != 0 || again.CachedBytes != planned {
		t.Errorf("warm of a warm dataset %+v: want all %d bytes cached", again, planned)
	}
	// The node read the pages of blocks whose list it is not in through
	// their owners, which cached them: peer hits now.
	if again.PeerHitBytes == 0 {
		t.Errorf("warm through a node outside a block's list: local %d, peer %d; want peer hits", again.LocalHitBytes, again.PeerHitBytes)
	}
}

// TestWarmAllReplicas: with replication 2, warming through one node of a
// block's preference list leaves the other node of the list to fill from
// it (a read there is a peer hit, not an origin read); --all-replicas
// reads every block through each node of its list, the origin serving
// each byte at most once, after which every node of every list serves the
// dataset from its own cache.
func TestWarmAllReplicas(t *testing.T) {
	c := liveCluster(t)
	withEnv(t, nil)
	ds, prefix := liveDataset(t, c, "warm-replicas", 8)
	planned, _, splits := datasetBytes(t, ds, nil)
	sched := c.SchedulerURL()
	addr := map[string]string{}
	for _, n := range c.Nodes {
		addr[n.ID()] = n.GRPCAddr()
	}
	uri0 := fileURI(ds.Files[0])
	prefs := prefList(t, sched, uri0, 0, 1)

	if len(prefs) > 1 {
		// The first node of the list fills; the second fills from it.
		mustRun(t, "warm", uri0, "--node", addr[prefs[0]])
		second, _ := warmJSON(t, uri0, "--node", addr[prefs[1]])
		if second.OriginBytes != 0 || second.PeerHitBytes == 0 {
			t.Errorf("the second node of %v after a warm through the first: %+v; want peer hits, no origin byte", prefs, second)
		}
	} else {
		t.Logf("replication 1: only --all-replicas itself is tested")
	}

	dry, _ := warmJSON(t, prefix, "--scheduler", sched, "--all-replicas", "--dry-run")
	if dry.Replication < 1 || dry.PlannedBytes != planned*int64(dry.Replication) {
		t.Errorf("dry run %+v: want %d bytes x replication %d", dry, planned, dry.Replication)
	}
	first, r := warmJSON(t, prefix, "--scheduler", sched, "--all-replicas")
	t.Logf("all replicas: %+v", first)
	checkConsistent(t, first, splits, planned*int64(dry.Replication))
	if first.Mode != "replicas" || first.Job != "" || first.OwnerUnavailableBytes != 0 || first.OriginBytes > planned {
		t.Errorf("summary %+v: want mode replicas, no job, at most the %d planned bytes from the origin (a list's later nodes fill from the earlier)", first, planned)
	}
	if !strings.Contains(r.stderr, "8/8 splits") {
		t.Errorf("no progress: %q", r.stderr)
	}
	again, _ := warmJSON(t, prefix, "--scheduler", sched, "--all-replicas")
	if again.OriginBytes != 0 || again.LocalHitBytes != again.Bytes {
		t.Errorf("second --all-replicas %+v: want every byte a local hit", again)
	}
	for _, n := range c.Nodes {
		if s, _ := warmJSON(t, prefix, "--node", n.GRPCAddr()); s.OriginBytes != 0 {
			t.Errorf("after --all-replicas, a warm through %s fetched %d bytes from the origin", n.ID(), s.OriginBytes)
		}
	}
	text := mustRun(t, "warm", prefix, "--scheduler", sched, "--all-replicas")
	if !regexp.MustCompile(`through (each of the \d+ nodes of every block.s preference list|the owner of every block)`).MatchString(text.stdout) || !strings.Contains(text.stdout, "were already cached") {
		t.Errorf("--all-replicas summary:\n%s", text.stdout)
	}
	// Whichever node of a list the scheduler picks now, it hits.
	for range 2 {
		if s, _ := warmJSON(t, prefix, "--scheduler", sched); s.OriginBytes != 0 {
			t.Errorf("a scheduler warm after --all-replicas: %+v; want no origin byte", s)
		}
	}
}

// TestWarmDryRun: a dry run prints the splits and reads nothing: the warm
// after it is cold (with one split at a time, only pages shared by two
// adjacent row groups can hit).
func TestWarmDryRun(t *testing.T) {
	c := liveCluster(t)
	withEnv(t, nil)
	ds, prefix := liveDataset(t, c, "warm-dry", 4)
	planned, _, splits := datasetBytes(t, ds, nil)
	node := c.Nodes[0].GRPCAddr()

	dry := mustRun(t, "warm", prefix, "--node", node, "--dry-run")
	if n := strings.Count(dry.stdout, "part-00000.parquet"); n != splits {
		t.Errorf("dry run lists %d splits, want %d:\n%s", n, splits, dry.stdout)
	}
	if !strings.Contains(dry.stdout, "Dry run: would warm 4 splits") {
		t.Errorf("dry run summary missing:\n%s", dry.stdout)
	}
	dj, _ := warmJSON(t, prefix, "--node", node, "--dry-run")
	if !dj.DryRun || dj.PlannedBytes != planned || dj.Bytes != 0 || dj.Splits != splits {
		t.Errorf("dry run --json %+v: want %d splits, %d bytes planned, none read", dj, splits, planned)
	}
	cold, _ := warmJSON(t, prefix, "--node", node, "--concurrency", "1")
	checkConsistent(t, cold, splits, planned)
	if page := int64(localcluster.DefaultPageSize); cold.CachedBytes > int64(splits)*page {
		t.Errorf("the warm after a dry run found %d bytes cached, want at most a page per split (%d)", cold.CachedBytes, int64(splits)*page)
	}
}

// TestWarmProgress: progress lines come on stderr while a warm runs.
func TestWarmProgress(t *testing.T) {
	c := liveCluster(t)
	withEnv(t, nil)
	_, prefix := liveDataset(t, c, "warm-progress", 8)
	old := warmProgressEvery
	warmProgressEvery = time.Millisecond
	t.Cleanup(func() { warmProgressEvery = old })
	r := mustRun(t, "warm", prefix, "--node", c.Nodes[0].GRPCAddr(), "--concurrency", "1")
	lines := regexp.MustCompile(`(?m)^locusctl warm: \[[0-9.]+s\] \d/2 objects, \d/8 splits, .* of .* \(.*/s\); from origin .*, already cached .*$`).FindAllString(r.stderr, -1)
	if len(lines) < 2 || !strings.Contains(lines[len(lines)-1], "2/2 objects, 8/8 splits") {
		t.Errorf("progress lines %q, want several ending with 2/2 objects, 8/8 splits", lines)
	}
}

// TestWarmErrors: what warm does when it cannot do everything.
func TestWarmErrors(t *testing.T) {
	c := liveCluster(t)
	withEnv(t, nil)
	node := c.Nodes[0].GRPCAddr()
	ds, prefix := liveDataset(t, c, "warm-errors", 8)

	// An unreadable footer: the file is skipped, the others warmed, exit 1.
	bad := filepath.Join(ds.Dir, "broken.parquet")
	if err := os.WriteFile(bad, []byte("PAR1 this is not a footer PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := locusctl(t, "warm", prefix, "--node", node, "--json")
	var s warmSummary
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("%v: %v", r, err)
	}
	if r.code != 1 || !strings.Contains(r.stderr, "warning: skipping "+fileURI(bad)) || !strings.Contains(r.stderr, "1 of 3 files were skipped") ||
		s.SkippedObjects != 1 || s.WarmedObjects != 2 || s.WarmedSplits != 8 {
		t.Errorf("a broken file: summary %+v, %v; want it skipped with a warning, the 2 others warmed, exit 1", s, r)
	}
	os.Remove(bad)

	empty := filepath.Join(c.DataRoot, localcluster.GatewayBucket, "warm-empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"warm", fileURI(empty) + "/", "--node", node}, "no Parquet objects under"},
		{[]string{"warm", prefix, "--node", node, "--columns", "nope"}, "all 2 Parquet objects were skipped"},
		{[]string{"warm", prefix, "--node", "127.0.0.1:1"}, "cannot reach the cache node at 127.0.0.1:1"},
		{[]string{"warm", prefix, "--scheduler", "http://127.0.0.1:1"}, "cannot reach the scheduler at http://127.0.0.1:1"},
		{[]string{"warm", "file:///nonexistent/dir/", "--node", node}, "file origin"},
	} {
		r := locusctl(t, tc.args...)
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("locusctl %q: %v; want exit 1 with %q", tc.args, r, tc.want)
		}
	}
}

func TestWarmBadArguments(t *testing.T) {
	p := "s3://bkt/prefix/"
	n := []string{"--node", "127.0.0.1:1"}
	with := func(more ...string) []string { return append(append([]string{"warm", p}, n...), more...) }
	checkBadArgs(t, []badArgs{
		{[]string{"warm", "--node", "127.0.0.1:1"}, "missing PREFIX"},
		{[]string{"warm", p}, "give --scheduler URL"},
		{with("--scheduler", "http://127.0.0.1:1"), "not both"},
		{with(p), "one PREFIX at a time"},
		{[]string{"warm", "gs://bkt/x/", "--node", "127.0.0.1:1"}, "unsupported URI scheme"},
		{[]string{"warm", p, "--node", "localhost"}, "want host:port"},
		{[]string{"warm", p, "--scheduler", "ftp://x"}, `--scheduler "ftp://x"`},
		{with("--concurrency", "0"), "--concurrency must be 1 to 256"},
		{with("--concurrency", "1000"), "--concurrency must be 1 to 256"},
		{with("--columns", " , "), "--columns is empty"},
		{with("--job", "j"), "--job and --wait need --scheduler"},
		{with("--wait", "1s"), "--job and --wait need --scheduler"},
		{with("--all-replicas"), "--all-replicas needs --scheduler"},
		{[]string{"warm", p, "--scheduler", "http://127.0.0.1:1", "--all-replicas", "--job", "j"}, "--all-replicas places no task"},
		{[]string{"warm", p, "--scheduler", "http://127.0.0.1:1", "--wait", "-1s"}, "--wait must not be negative"},
		{with("--timeout", "-1s"), "--timeout must not be negative"},
		{with("--tls-cert", "c.pem"), "--tls-cert and --tls-key go together"},
		{with("--bogus"), "flag provided but not defined: -bogus"},
	})
	h := locusctl(t, "warm", "--help")
	if h.code != 0 || !strings.Contains(h.stdout, "--dry-run") || !strings.Contains(h.stdout, "Examples:") || h.stderr != "" {
		t.Errorf("warm --help: %v", h)
	}
}
