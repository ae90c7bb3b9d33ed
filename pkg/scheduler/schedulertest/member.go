package schedulertest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
)

// MemberEnv marks a process started by StartMember. The test binary
// re-executes itself as a cache-node member (the helper-process pattern):
// call MemberMain first thing in TestMain.
const MemberEnv = "LOCUS_SCHEDULERTEST_MEMBER"

// MemberMain runs this process as a member and exits, when it was started
// by StartMember; otherwise it returns at once.
//
//	func TestMain(m *testing.M) {
//		schedulertest.MemberMain()
//		os.Exit(m.Run())
//	}
func MemberMain() {
	if os.Getenv(MemberEnv) != "1" {
		return
	}
	os.Exit(memberMain())
}

// memberMain joins the gossip as a cache node that does nothing else: the
// scheduler only sees gossip, so for placement tests it stands in for a
// cache node. It prints "ready <gossip addr>" and leaves when stdin closes
// or on SIGTERM.
func memberMain() int {
	slots, _ := strconv.Atoi(os.Getenv("MEMBER_SLOTS"))
	bs, _ := strconv.ParseInt(os.Getenv("MEMBER_BLOCK_SIZE"), 10, 64)
	repl, _ := strconv.Atoi(os.Getenv("MEMBER_REPLICATION"))
	meta := membership.NodeMeta{
		ID:            os.Getenv("MEMBER_ID"),
		Rack:          os.Getenv("MEMBER_RACK"),
		GRPCAddr:      os.Getenv("MEMBER_GRPC"),
		HTTPAddr:      os.Getenv("MEMBER_HTTP"),
		Slots:         slots,
		CapacityBytes: 1 << 30,
		BlockSize:     bs,
		Replication:   repl,
	}
	m, err := membership.New(membership.Config{Meta: meta, BindAddr: "127.0.0.1:0", Tuning: membership.LoopbackTuning()})
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	if seeds := os.Getenv("MEMBER_JOIN"); seeds != "" {
		if _, err := m.Join(strings.Split(seeds, ",")); err != nil {
			fmt.Println("error", err)
			return 2
		}
	}
	fmt.Println("ready", m.GossipAddr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(eof) }()
	select {
	case <-sig:
	case <-eof:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.Leave(ctx)
	return 0
}

// Member is a cache-node member running as a child process.
type Member struct {
	ID         string
	GossipAddr string
	cmd        *exec.Cmd
	stdin      io.WriteCloser
	waited     chan struct{}
}

// MemberOptions are the optional settings of StartMember.
type MemberOptions struct {
	Rack      string
	Slots     int // default 4
	BlockSize int64
	// Replication the member announces (default 0: New's,
	// membership.DefaultReplication).
	Replication int
	Join        []string // gossip seeds
	GRPCAddr    string   // announced; default 127.0.0.1:7070
	HTTPAddr    string   // announced; default none
}

// StartMember starts a member process running this test binary (see
// MemberMain) and waits until it has joined. It is killed when the test
// ends, if still running.
func StartMember(t testing.TB, id string, o MemberOptions) *Member {
	t.Helper()
	if o.Slots == 0 {
		o.Slots = 4
	}
	if o.GRPCAddr == "" {
		o.GRPCAddr = "127.0.0.1:7070"
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), MemberEnv+"=1",
		"MEMBER_ID="+id, "MEMBER_RACK="+o.Rack, "MEMBER_SLOTS="+strconv.Itoa(o.Slots),
		"MEMBER_BLOCK_SIZE="+strconv.FormatInt(o.BlockSize, 10), "MEMBER_REPLICATION="+strconv.Itoa(o.Replication),
		"MEMBER_JOIN="+strings.Join(o.Join, ","),
		"MEMBER_GRPC="+o.GRPCAddr, "MEMBER_HTTP="+o.HTTPAddr)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start member %s: %v", id, err)
	}
	m := &Member{ID: id, cmd: cmd, stdin: stdin, waited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(m.waited) }()
	t.Cleanup(m.Kill)
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l, ok := <-line:
		if !ok || !strings.HasPrefix(l, "ready ") {
			t.Fatalf("member %s: %q", id, l)
		}
		m.GossipAddr = strings.TrimPrefix(l, "ready ")
	case <-time.After(30 * time.Second):
		t.Fatalf("member %s not ready within 30s", id)
	}
	return m
}

// Pid returns the member's process id.
func (m *Member) Pid() int { return m.cmd.Process.Pid }

// Kill sends SIGKILL (a crash: no goodbye) and reaps the process.
func (m *Member) Kill() {
	select {
	case <-m.waited:
		return
	default:
	}
	_ = m.cmd.Process.Kill()
	<-m.waited
}

// Stop makes the member leave the gossip gracefully and waits for it.
func (m *Member) Stop() {
	_ = m.stdin.Close()
	select {
	case <-m.waited:
	case <-time.After(10 * time.Second):
		m.Kill()
	}
}
