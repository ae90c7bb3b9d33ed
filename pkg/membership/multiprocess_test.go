package membership_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/ring"
)

// The multi-process test re-executes this test binary as cluster members
// (the helper-process pattern): TestMain sees childEnv and runs childMain
// instead of the tests. A child is configured through environment
// variables, prints JSON lines on stdout (see childEvent) and exits when its
// stdin closes.
const childEnv = "LOCUS_MEMBERSHIP_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}

// childEvent is one line a child prints.
type childEvent struct {
	Event   string        `json:"event"` // ready, joined, view, error
	T       int64         `json:"t"`     // child's wall clock, Unix ns
	Addr    string        `json:"addr,omitempty"`
	Error   string        `json:"error,omitempty"`
	Epoch   uint64        `json:"epoch,omitempty"`
	Members []childMember `json:"members,omitempty"`
}

type childMember struct {
	ID    string `json:"id"`
	Addr  string `json:"addr"`
	State string `json:"state"`
	Role  string `json:"role"`
}

// childMain is a cluster member: CHILD_ID, CHILD_BIND (ip:port),
// CHILD_JOIN (seed, optional), CHILD_BLOCK_SIZE (bytes, optional),
// CHILD_ROLE (optional).
func childMain() int {
	out := json.NewEncoder(os.Stdout)
	var mu sync.Mutex
	emit := func(e childEvent) {
		e.T = time.Now().UnixNano()
		mu.Lock()
		_ = out.Encode(e)
		mu.Unlock()
	}
	fail := func(err error) int {
		emit(childEvent{Event: "error", Error: err.Error()})
		return 3
	}
	meta := membership.NodeMeta{
		ID:       os.Getenv("CHILD_ID"),
		Rack:     "r1",
		GRPCAddr: "127.0.0.1:7070",
		Slots:    4,
		Role:     membership.Role(os.Getenv("CHILD_ROLE")),
	}
	if meta.Role == membership.RoleObserver {
		meta.GRPCAddr = ""
	}
	if s := os.Getenv("CHILD_BLOCK_SIZE"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fail(err)
		}
		meta.BlockSize = n
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := membership.New(membership.Config{
		Meta:     meta,
		BindAddr: os.Getenv("CHILD_BIND"),
		Tuning:   membership.LoopbackTuning(),
		Logger:   logger,
	})
	if err != nil {
		return fail(err)
	}
	defer m.Shutdown()
	emit(childEvent{Event: "ready", Addr: m.GossipAddr()})
	if seed := os.Getenv("CHILD_JOIN"); seed != "" {
		if _, err := m.Join([]string{seed}); err != nil {
			return fail(err)
		}
	}
	emit(childEvent{Event: "joined"})
	go func() {
		v := m.View()
		for {
			e := childEvent{Event: "view", Epoch: v.Epoch}
			for _, mem := range v.Members {
				e.Members = append(e.Members, childMember{ID: mem.ID, Addr: mem.GossipAddr, State: string(mem.State), Role: string(mem.Role)})
			}
			emit(e)
			select {
			case <-v.Changed():
				v = m.View()
			case <-m.Done():
				return
			}
		}
	}()
	_, _ = io.Copy(io.Discard, os.Stdin) // run until the parent closes stdin
	return 0
}

// child is the parent's handle on a member process.
type child struct {
	id     string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lockedBuffer
	events chan childEvent // every line, in order; closed at EOF
	exited chan struct{}   // closed when the process has been waited for
	err    error           // Wait's result, valid after exited
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func startChild(t *testing.T, id, bind, join string, extraEnv ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "CHILD_ID="+id, "CHILD_BIND="+bind, "CHILD_JOIN="+join)
	// A -race binary sleeps 1 s at exit by default (GORACE atexit_sleep_ms);
	// race reports still print and fail the child with status 66.
	cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	cmd.Env = append(cmd.Env, extraEnv...)
	c := &child{id: id, cmd: cmd, stderr: &lockedBuffer{}, events: make(chan childEvent, 1024), exited: make(chan struct{})}
	cmd.Stderr = c.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", id, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e childEvent
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				e = childEvent{Event: "garbage", Error: sc.Text()}
			}
			c.events <- e
		}
		close(c.events)
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		_ = c.stdin.Close()
		select {
		case <-c.exited:
		case <-time.After(3 * time.Second):
			_ = cmd.Process.Kill()
			<-c.exited
		}
		if strings.Contains(c.stderr.String(), "WARNING: DATA RACE") {
			t.Errorf("child %s reported a data race", id)
		}
		if t.Failed() {
			if s := c.stderr.String(); s != "" {
				t.Logf("child %s stderr:\n%s", id, s)
			}
		}
	})
	return c
}

// next returns the child's next event, failing the test after timeout.
func (c *child) next(t *testing.T, timeout time.Duration) childEvent {
	t.Helper()
	select {
	case e, ok := <-c.events:
		if !ok {
			<-c.exited
			t.Fatalf("child %s exited (%v) before the expected event; stderr:\n%s", c.id, c.err, c.stderr.String())
		}
		return e
	case <-time.After(timeout):
		t.Fatalf("child %s: no event within %v", c.id, timeout)
	}
	panic("unreachable")
}

// expect returns the child's next event, which must be of the given kind.
func (c *child) expect(t *testing.T, kind string, timeout time.Duration) childEvent {
	t.Helper()
	e := c.next(t, timeout)
	if e.Event != kind {
		t.Fatalf("child %s: got event %+v, want %q", c.id, e, kind)
	}
	return e
}

// viewTracker keeps each child's latest view and every view ever seen.
type viewTracker struct {
	latest map[string]childEvent
	all    []childEvent
}

// pump moves pending view events of cs into the tracker, waiting at most
// wait for the first one.
func (vt *viewTracker) pump(t *testing.T, cs []*child, wait time.Duration) {
	t.Helper()
	deadline := time.After(wait)
	for {
		got := false
		for _, c := range cs {
			for {
				select {
				case e, ok := <-c.events:
					if !ok {
						<-c.exited
						t.Fatalf("child %s exited unexpectedly (%v); stderr:\n%s", c.id, c.err, c.stderr.String())
					}
					if e.Event != "view" {
						t.Fatalf("child %s: unexpected event %+v", c.id, e)
					}
					vt.latest[c.id] = e
					vt.all = append(vt.all, e)
					got = true
					continue
				default:
				}
				break
			}
		}
		if got {
			return
		}
		select {
		case <-deadline:
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// waitAll waits until pred holds for the latest view of every child in cs
// and returns, per child, the time (child clock) of the first view for which
// it held since the wait began.
func (vt *viewTracker) waitAll(t *testing.T, cs []*child, timeout time.Duration, what string, pred func(childEvent) bool) map[string]time.Time {
	t.Helper()
	first := map[string]time.Time{}
	note := func() {
		for _, c := range cs {
			if e, ok := vt.latest[c.id]; ok && pred(e) {
				if _, seen := first[c.id]; !seen {
					first[c.id] = time.Unix(0, e.T)
				}
			} else {
				delete(first, c.id) // it stopped holding: start over for this child
			}
		}
	}
	note()
	deadline := time.Now().Add(timeout)
	for len(first) < len(cs) {
		if time.Now().After(deadline) {
			var report strings.Builder
			for _, c := range cs {
				fmt.Fprintf(&report, "\n  %s: %s", c.id, describeEvent(vt.latest[c.id]))
			}
			t.Fatalf("%s: not reached within %v:%s", what, timeout, report.String())
		}
		vt.pump(t, cs, 50*time.Millisecond)
		note()
	}
	return first
}

func describeEvent(e childEvent) string {
	ids := make([]string, len(e.Members))
	for i, m := range e.Members {
		ids[i] = m.ID
	}
	return fmt.Sprintf("epoch=%016x members=%v", e.Epoch, ids)
}

func memberIDs(e childEvent) []string {
	ids := make([]string, 0, len(e.Members))
	for _, m := range e.Members {
		ids = append(ids, m.ID)
	}
	return ids
}

// expectedEpoch computes, in the parent, the epoch a View over these cache
// node ids must have: the fingerprint is a pure function of the membership.
func expectedEpoch(t *testing.T, ids ...string) uint64 {
	t.Helper()
	var ms []membership.Member
	for _, id := range ids {
		ms = append(ms, membership.Member{NodeMeta: membership.NodeMeta{ID: id, Rack: "r1", GRPCAddr: "127.0.0.1:7070", Slots: 4}})
	}
	v, err := membership.NewView(ms, ring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return v.Epoch
}

// TestMultiProcess is the acceptance test: five member processes on
// 127.0.0.1..127.0.0.5 converge on one ring epoch within 2 s of the last
// join; after kill -9 of one, the others drop it within 5 s; a member with a
// different block size is refused and says why; a second process claiming a
// taken id is refused; an observer joins without changing the ring; the
// killed member restarts on a new port and rejoins.
func TestMultiProcess(t *testing.T) {
	ids := []string{"n1", "n2", "n3", "n4", "n5"}
	start := time.Now()
	seed := startChild(t, "n1", "127.0.0.1:0", "")
	seedAddr := seed.expect(t, "ready", 10*time.Second).Addr
	seed.expect(t, "joined", 5*time.Second)
	cs := []*child{seed}
	for i, id := range ids[1:] {
		cs = append(cs, startChild(t, id, fmt.Sprintf("127.0.0.%d:0", i+2), seedAddr))
	}
	var lastJoin time.Time
	for _, c := range cs[1:] {
		addr := c.expect(t, "ready", 10*time.Second).Addr
		if !strings.HasPrefix(addr, "127.0.0.") {
			t.Fatalf("child %s bound %s", c.id, addr)
		}
		if j := time.Unix(0, c.expect(t, "joined", 10*time.Second).T); j.After(lastJoin) {
			lastJoin = j
		}
	}

	// 1. Convergence on one epoch, which the parent computes independently.
	want5 := expectedEpoch(t, ids...)
	vt := &viewTracker{latest: map[string]childEvent{}}
	at := vt.waitAll(t, cs, 10*time.Second, "5 members on one epoch", func(e childEvent) bool {
		return e.Epoch == want5 && len(e.Members) == 5
	})
	var conv time.Duration
	for _, ts := range at {
		conv = max(conv, ts.Sub(lastJoin))
	}
	t.Logf("converged: 5 members on epoch %016x %v after the last join (%v after the first process started)",
		want5, conv, time.Since(start).Round(time.Millisecond))
	if conv > 2*time.Second {
		t.Errorf("convergence took %v after the last join, want <= 2s", conv)
	}

	// 2. kill -9 one member; the survivors must drop it within 5 s.
	victim := cs[2] // n3
	killed := time.Now()
	if err := victim.cmd.Process.Kill(); err != nil { // SIGKILL on Linux
		t.Fatal(err)
	}
	survivors := []*child{cs[0], cs[1], cs[3], cs[4]}
	want4 := expectedEpoch(t, "n1", "n2", "n4", "n5")
	at = vt.waitAll(t, survivors, 10*time.Second, "survivors drop n3", func(e childEvent) bool {
		return e.Epoch == want4 && len(e.Members) == 4
	})
	var worst time.Duration
	var per []string
	for _, c := range survivors {
		d := at[c.id].Sub(killed)
		worst = max(worst, d)
		per = append(per, fmt.Sprintf("%s=%v", c.id, d.Round(time.Millisecond)))
	}
	t.Logf("kill -9 n3: dropped by all survivors after %v (%s)", worst.Round(time.Millisecond), strings.Join(per, " "))
	if worst > 5*time.Second {
		t.Errorf("failure detection took %v, want <= 5s", worst)
	}

	// 3. A member with a 64 MiB block size is refused, and says why.
	misfit := startChild(t, "n6", "127.0.0.6:0", seedAddr, "CHILD_BLOCK_SIZE="+strconv.Itoa(64<<20))
	misfit.expect(t, "ready", 10*time.Second)
	e := misfit.expect(t, "error", 10*time.Second)
	t.Logf("n6 (64 MiB blocks) refused: %s", e.Error)
	for _, want := range []string{"block size", "64 MiB", "128 MiB"} {
		if !strings.Contains(e.Error, want) {
			t.Errorf("refusal %q does not mention %q", e.Error, want)
		}
	}
	<-misfit.exited
	if misfit.err == nil {
		t.Errorf("n6 exited with status 0, want an error status")
	}

	// 4. A second process claiming n2 is refused.
	dup := startChild(t, "n2", "127.0.0.7:0", seedAddr)
	dup.expect(t, "ready", 10*time.Second)
	e = dup.expect(t, "error", 10*time.Second)
	t.Logf("second n2 refused: %s", e.Error)
	if !strings.Contains(e.Error, "duplicate node id") || !strings.Contains(e.Error, `"n2"`) {
		t.Errorf("refusal %q does not name the duplicate id", e.Error)
	}
	<-dup.exited

	// 5. An observer joins: every member lists it, the ring epoch stays.
	obs := startChild(t, "sched", "127.0.0.8:0", seedAddr, "CHILD_ROLE=observer")
	obs.expect(t, "ready", 10*time.Second)
	obs.expect(t, "joined", 10*time.Second)
	withObs := append(append([]*child(nil), survivors...), obs)
	vt.waitAll(t, withObs, 5*time.Second, "observer listed, epoch unchanged", func(e childEvent) bool {
		return e.Epoch == want4 && len(e.Members) == 5 && containsID(e, "sched")
	})

	// 6. n3 comes back (a restarted pod: same id, new port): everybody
	// returns to the five-member ring.
	restarted := time.Now()
	back := startChild(t, "n3", "127.0.0.3:0", seedAddr)
	back.expect(t, "ready", 10*time.Second)
	back.expect(t, "joined", 10*time.Second)
	withBack := append(append([]*child(nil), withObs...), back)
	at = vt.waitAll(t, withBack, 10*time.Second, "n3 back in the ring", func(e childEvent) bool {
		return e.Epoch == want5 && len(e.Members) == 6
	})
	var rejoin time.Duration
	for _, ts := range at {
		rejoin = max(rejoin, ts.Sub(restarted))
	}
	t.Logf("restarted n3 (new port) back in every view %v after its process started", rejoin.Round(time.Millisecond))

	// No survivor ever listed the refused n6, nor n2 at the impostor's address.
	vt.pump(t, survivors, 200*time.Millisecond)
	for _, e := range vt.all {
		for _, m := range e.Members {
			if m.ID == "n6" || (m.ID == "n2" && strings.HasPrefix(m.Addr, "127.0.0.7:")) {
				t.Errorf("a survivor's view listed refused member %+v: %s", m, describeEvent(e))
			}
		}
	}
}

func containsID(e childEvent, id string) bool {
	for _, m := range e.Members {
		if m.ID == id {
			return true
		}
	}
	return false
}
