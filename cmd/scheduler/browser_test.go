package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// chromium returns a headless-capable Chromium, or skips (fails with
// LOCUS_REQUIRE_TOOLS=1).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return tool(t, "chromium", "Debian: chromium")
}

// TestStatusPageInChromium: the scheduler's own page, rendered by a real
// browser (headless Chromium running its JavaScript against the live JSON
// API), shows the ring's members, the locality counters and the job, and
// no error.
func TestStatusPageInChromium(t *testing.T) {
	browser := chromium(t)
	m := schedulertest.StartMember(t, "n1", schedulertest.MemberOptions{Rack: "r1", Slots: 8})
	p := schedulertest.StartProcess(t, schedulertest.BuildScheduler(t), schedulertest.ProcessOptions{ID: "s", Join: []string{m.GossipAddr}})
	c := p.Client()
	waitAlive(t, c, 1, 10*time.Second)
	ctx := context.Background()
	for i := range 4 {
		pl, err := c.Place(ctx, schedapi.PlaceRequest{Job: "ui-job", Task: fmt.Sprint(i), Split: sp(fmt.Sprint("s3://bkt/", i))})
		if err != nil {
			t.Fatal(err)
		}
		if i < 3 {
			if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "ui-job", Task: pl.Task, LocalHitBytes: 3 << 20, MissBytes: 1 << 20}); err != nil {
				t.Fatal(err)
			}
		}
	}

	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	// --virtual-time-budget lets the page's fetches and first refresh
	// finish before the DOM is dumped.
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000", "--dump-dom", "http://"+p.HTTPAddr+"/")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s --dump-dom: %v\n%s", browser, err, stderr.String())
	}
	dom := string(out)
	if errDiv := regexp.MustCompile(`<div id="error" class="err">([^<]*)</div>`).FindStringSubmatch(dom); errDiv == nil || errDiv[1] != "" {
		t.Errorf("the page's error line is %q, want it present and empty", errDiv)
	}
	for _, want := range []string{
		"<td class=\"l\">n1</td>",         // the member row
		"<td class=\"l\">DATA_LOCAL</td>", // the locality table
		"<td class=\"l\">ui-job</td>",     // the job row
		"75.0%",                           // the hit ratio: 3 MiB of 4 MiB from the cache
		"standalone",                      // the role in the subtitle
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if strings.Contains(dom, "loading…") {
		t.Error("the page still says loading…: its script did not run")
	}
	if t.Failed() {
		t.Logf("rendered DOM:\n%s\nstderr:\n%s", dom, stderr.String())
	}
}
