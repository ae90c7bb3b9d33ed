package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/ring"
)

// jobCounters runs locusctl jobs JOB --json.
func jobCounters(t *testing.T, sched, job string) client.JobCounters {
	t.Helper()
	r := mustRun(t, "jobs", "--scheduler", sched, job, "--json")
	var jc client.JobCounters
	if err := json.Unmarshal([]byte(r.stdout), &jc); err != nil {
		t.Fatalf("jobs --json: %v\n%s", err, r.stdout)
	}
	return jc
}

// TestPlaceJobsComplete: place prints the node, address, locality, owner
// and epoch; jobs then shows the task running on that level; complete
// frees it and counts its bytes by source; completing it again is exit 1.
func TestPlaceJobsComplete(t *testing.T) {
	c := liveCluster(t)
	withEnv(t, nil)
	ds, _ := liveDataset(t, c, "place", 4)
	uri := fileURI(ds.Files[0])
	sched := c.SchedulerURL()
	job := fmt.Sprintf("place-test-%d", datasetSeq.Add(1)) // new counters when run again (-count)

	r := mustRun(t, "place", "--scheduler", sched, "--job", job, "--task", "t1", "--uri", uri, "--offset", "4", "--length", "1000", "--wait", "2s")
	t.Logf("place:\n%s", r.stdout)
	m := regexp.MustCompile(`Placed task t1 of job ` + regexp.QuoteMeta(job) + ` on (\S+) \(rack (\S+)\): (\S+)`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no placement line in:\n%s", r.stdout)
	}
	node, rack, locality := m[1], m[2], m[3]
	prefs := prefList(t, sched, uri, 4, 1000)
	owner := prefs[0]
	if !slices.Contains(prefs, node) || locality != "DATA_LOCAL" {
		t.Errorf("placed on %s (%s), want a node of %v, DATA_LOCAL (an idle cluster, a 2s wait)", node, locality, prefs)
	}
	var addr string
	for _, n := range c.Nodes {
		if n.ID() == node {
			addr = n.GRPCAddr()
			if n.Rack() != rack {
				t.Errorf("rack %s, want %s", rack, n.Rack())
			}
		}
	}
	for _, frag := range []string{"address     " + addr, "owner       " + owner, "ring epoch  ", "locusctl complete --scheduler " + sched + " --job " + job + " --task t1"} {
		if addr == "" || !strings.Contains(r.stdout, frag) {
			t.Errorf("place output lacks %q", frag)
		}
	}

	jc := jobCounters(t, sched, job)
	if jc.Running != 1 || jc.DataLocalTasks != 1 || jc.Completed != 0 {
		t.Errorf("after place: running %d, DATA_LOCAL %d, completed %d; want 1, 1, 0", jc.Running, jc.DataLocalTasks, jc.Completed)
	}
	text := mustRun(t, "jobs", "--scheduler", sched, job)
	if !regexp.MustCompile(`(?m)^DATA_LOCAL\s+1\s+1\s+0\s+0\s`).MatchString(text.stdout) {
		t.Errorf("jobs %s does not show one running DATA_LOCAL task:\n%s", job, text.stdout)
	}

	// A second place of the same running task is refused.
	if again := locusctl(t, "place", "--scheduler", sched, "--job", job, "--task", "t1", "--uri", uri, "--length", "10"); again.code != 1 ||
		!strings.Contains(again.stderr, "already placed") {
		t.Errorf("placing t1 again: %v; want exit 1, already placed", again)
	}

	done := mustRun(t, "complete", "--scheduler", sched, "--job", job, "--task", "t1", "--local", "600", "--peer", "300", "--miss", "100", "--duration", "25ms")
	if !strings.Contains(done.stdout, "Completed task t1 of job "+job+": DATA_LOCAL") {
		t.Errorf("complete printed %q", done.stdout)
	}
	jc = jobCounters(t, sched, job)
	dl := byLevel(jc)["DATA_LOCAL"]
	if jc.Running != 0 || jc.Completed != 1 || jc.Bytes != 1000 || jc.LocalHitBytes != 600 || jc.PeerHitBytes != 300 || jc.MissBytes != 100 ||
		dl.Completed != 1 || dl.TaskTimeMS != 25 || jc.HitRatio != 0.9 {
		t.Errorf("after complete: %+v; want 1 completed DATA_LOCAL task of 1000 bytes (600/300/100), 25ms, hit ratio 0.9", jc)
	}
	text = mustRun(t, "jobs", "--scheduler", sched, job)
	t.Logf("jobs %s:\n%s", job, text.stdout)
	if !regexp.MustCompile(`(?m)^DATA_LOCAL\s+1\s+0\s+1\s+0\s+0\.900\s+0\.600\s+1000 B\s+600 B\s+300 B\s+100 B\s+25ms$`).MatchString(text.stdout) {
		t.Errorf("jobs %s does not show the completed task's counters:\n%s", job, text.stdout)
	}

	if again := locusctl(t, "complete", "--scheduler", sched, "--job", job, "--task", "t1"); again.code != 1 || !strings.Contains(again.stderr, "is not running") {
		t.Errorf("completing t1 again: %v; want exit 1, not running", again)
	}

	// --json, and without --length: the rest of --offset's block.
	bs := int64(512 << 10)
	js := mustRun(t, "place", "--scheduler", sched, "--job", job, "--task", "t2", "--uri", uri, "--offset", "600000", "--json")
	var p client.Placement
	if err := json.Unmarshal([]byte(js.stdout), &p); err != nil {
		t.Fatalf("place --json: %v\n%s", err, js.stdout)
	}
	// [600000, 1048576) lies in block 1: the placement key's owner.
	if want := prefList(t, sched, uri, 600000, 2*bs-600000); p.Owner != want[0] || p.Node == "" || p.Address == "" || p.RingEpoch == 0 {
		t.Errorf("place --json %+v: want owner %s (block 1), a node, an address and an epoch", p, want[0])
	}
	cj := mustRun(t, "complete", "--scheduler", sched, "--job", job, "--task", "t2", "--json")
	var cr struct{ Job, Task, Locality string }
	if err := json.Unmarshal([]byte(cj.stdout), &cr); err != nil || cr.Task != "t2" || cr.Locality != p.Locality {
		t.Errorf("complete --json: %q (%v), want task t2 with locality %s", cj.stdout, err, p.Locality)
	}
}

// prefList returns the preference list (owner first) of the split's
// placement key on the scheduler's ring, rebuilt by plan's helper.
func prefList(t *testing.T, sched, uri string, off, length int64) []string {
	t.Helper()
	src, err := planRing(t.Context(), planOptions{schedulerURL: sched}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	key, err := ring.PlacementKey(uri, off, length, src.blockSize)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range src.ring.Owners(key, src.replication) {
		ids = append(ids, n.ID)
	}
	return ids
}

func TestPlaceBadArguments(t *testing.T) {
	s := []string{"--scheduler", "http://127.0.0.1:1"}
	full := func(more ...string) []string {
		return append(append([]string{"place", "--job", "j", "--task", "t", "--uri", "s3://bkt/k"}, s...), more...)
	}
	checkBadArgs(t, []badArgs{
		{append([]string{"place", "--task", "t", "--uri", "s3://bkt/k"}, s...), "missing --job"},
		{append([]string{"place", "--job", "j", "--uri", "s3://bkt/k"}, s...), "missing --task"},
		{append([]string{"place", "--job", "j", "--task", "t"}, s...), "missing --uri"},
		{[]string{"place", "--job", "j", "--task", "t", "--uri", "s3://bkt/k"}, "missing --scheduler"},
		{full("--uri", "http://bkt/k"), "--uri"},
		{full("--uri", "s3://bkt/dir/"), "names a prefix"},
		{full("--offset", "-1"), "-1"},
		{full("--length", "0"), "--length must be positive"},
		{full("--length", "lots"), "invalid value \"lots\" for flag -length"},
		{full("--wait", "-1s"), "--wait must not be negative"},
		{full("extra"), `unexpected argument "extra"`},
	})
}

func TestCompleteBadArguments(t *testing.T) {
	base := func(more ...string) []string {
		return append([]string{"complete", "--scheduler", "http://127.0.0.1:1", "--job", "j", "--task", "t"}, more...)
	}
	checkBadArgs(t, []badArgs{
		{[]string{"complete", "--scheduler", "http://127.0.0.1:1", "--task", "t"}, "missing --job"},
		{[]string{"complete", "--scheduler", "http://127.0.0.1:1", "--job", "j"}, "missing --task"},
		{[]string{"complete", "--job", "j", "--task", "t"}, "missing --scheduler"},
		{base("--local", "10", "--bytes", "5"), "--bytes 5 is less than --local + --peer + --miss = 10"},
		{base("--duration", "-1s"), "--duration must not be negative"},
		{base("--miss", "-3"), "-3"},
		{base("extra"), `unexpected argument "extra"`},
	})
	h := locusctl(t, "complete", "--help")
	if h.code != 0 || !strings.Contains(h.stdout, "Example:") || h.stderr != "" {
		t.Errorf("complete --help: %v", h)
	}
}

// TestJobsAll: jobs without JOB lists every job, with a line for all of
// them; an unknown job is exit 1.
func TestJobsAll(t *testing.T) {
	c := liveCluster(t)
	withEnv(t, nil)
	sched := c.SchedulerURL()
	uri := "file:///nonexistent/jobs-test.parquet" // placement needs no object
	seq := datasetSeq.Add(1)
	jobA, jobB := fmt.Sprintf("jobs-a-%d", seq), fmt.Sprintf("jobs-b-%d", seq)
	for i, job := range []string{jobA, jobB} {
		for k := 0; k <= i; k++ {
			task := "t" + strconv.Itoa(k)
			mustRun(t, "place", "--scheduler", sched, "--job", job, "--task", task, "--uri", uri, "--offset", strconv.Itoa(k*1000), "--length", "100")
			mustRun(t, "complete", "--scheduler", sched, "--job", job, "--task", task, "--local", "100")
		}
	}
	r := mustRun(t, "jobs", "--scheduler", sched, "--json")
	var all allJobs
	if err := json.Unmarshal([]byte(r.stdout), &all); err != nil {
		t.Fatalf("jobs --json: %v\n%s", err, r.stdout)
	}
	got := map[string]int64{}
	var sum int64
	for _, jc := range all.Jobs {
		got[jc.Job] = jc.Completed
		sum += jc.Completed
	}
	if got[jobA] != 1 || got[jobB] != 2 {
		t.Errorf("jobs --json: completed %v, want %s 1 and %s 2", got, jobA, jobB)
	}
	if all.All.Completed != sum {
		t.Errorf("all jobs together completed %d, the jobs sum to %d", all.All.Completed, sum)
	}
	text := mustRun(t, "jobs", "--scheduler", sched)
	t.Logf("jobs:\n%s", text.stdout)
	for _, re := range []string{`(?m)^` + jobA + `\s+1\s+\d+\s+\d+\s+\d+\s+0\s+0\s+0\s+1\.000\s`, `(?m)^` + jobB + `\s+2\s`, `(?m)^\(all\)\s+` + fmt.Sprint(placed(all.All)) + `\s`} {
		if !regexp.MustCompile(re).MatchString(text.stdout) {
			t.Errorf("jobs output does not match %s:\n%s", re, text.stdout)
		}
	}
	if r := locusctl(t, "jobs", "--scheduler", sched, "no-such-job"); r.code != 1 || !strings.Contains(r.stderr, `knows no job "no-such-job"`) {
		t.Errorf("jobs no-such-job: %v; want exit 1", r)
	}
	if r := locusctl(t, "jobs", "--scheduler", "http://127.0.0.1:1"); r.code != 1 || !strings.Contains(r.stderr, "cannot reach the scheduler") {
		t.Errorf("jobs against nothing: %v; want exit 1, cannot reach", r)
	}
	checkBadArgs(t, []badArgs{
		{[]string{"jobs"}, "missing --scheduler"},
		{[]string{"jobs", "--scheduler", sched, "a", "b"}, "one job at a time"},
		{[]string{"jobs", "--scheduler", sched, "--json=maybe"}, "invalid boolean value"},
	})
}

// TestPlaceOutlastsTheQueueWait: the scheduler keeps a queued task up to
// its two locality waits (data-local, then rack-local) and then its
// --max-queue-wait before it answers 503; place waits that long (--timeout
// on top of both waits), so the user reads the scheduler's answer, not a
// bare "context deadline exceeded". The fake scheduler answers 503 after
// the two waits and half a --timeout.
func TestPlaceOutlastsTheQueueWait(t *testing.T) {
	const wait, timeout = 500 * time.Millisecond, time.Second
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2*wait + timeout/2)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":"no node available: no node could take the task within 1.5s","code":"no_node"}`)
	}))
	defer srv.Close()
	withEnv(t, nil)
	r := locusctl(t, "place", "--scheduler", srv.URL, "--job", "j", "--task", "t", "--uri", "s3://bkt/k", "--length", "1",
		"--wait", wait.String(), "--timeout", timeout.String())
	if r.code != 1 || !strings.Contains(r.stderr, "no node could take the task") {
		t.Errorf("place: %v; want exit 1 with the scheduler's 503", r)
	}
}
