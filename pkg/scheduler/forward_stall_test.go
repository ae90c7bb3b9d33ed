package scheduler_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// TestForwardToStalledLeaderEndsAtNewLeader: a follower forwards a call
// to a leader that accepts it and then stalls (a paused process); once
// another leader is elected the call ends at once with a 503 not_leader
// naming the new leader, which the client can retry there. Was: the call
// hung until the stalled leader resumed or the client gave up (16 s in a
// reviewer's SIGSTOP run, where the follower knew the new leader after 9).
func TestForwardToStalledLeaderEndsAtNewLeader(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	release := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // the stalled leader: takes the call, never answers
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer stalled.Close()
	defer close(release) // before Close, which waits for the handler

	// The stalled leader holds the election (its value names its HTTP
	// address, as a scheduler's does).
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	prefix := "/" + t.Name() + "/"
	ghost, _ := json.Marshal(scheduler.LeaderInfo{ID: "stalled", HTTP: strings.TrimPrefix(stalled.URL, "http://")})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := concurrency.NewElection(sess, prefix+"election/").Campaign(ctx, string(ghost)); err != nil {
		t.Fatal(err)
	}

	f := schedulertest.Start(t, scheduler.Config{
		NodeID: "follower", Membership: threeNodes(t),
		Etcd: scheduler.EtcdConfig{Endpoints: e.Endpoints, SessionTTL: 2 * time.Second, Prefix: prefix, Forward: true},
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if l, ok := f.Leader(); ok && l.ID == "stalled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the follower never learned of the stalled leader")
		}
	}

	type answer struct {
		status int
		body   string
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		body := `{"job":"j","task":"t","split":{"uri":"s3://bkt/k","offset":0,"length":1}}`
		resp, err := http.Post("http://"+f.HTTPAddr()+"/v1/place", "application/json", strings.NewReader(body))
		if err != nil {
			done <- answer{err: err}
			return
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- answer{status: resp.StatusCode, body: string(raw)}
	}()
	time.Sleep(300 * time.Millisecond)   // the call is at the stalled leader
	if err := sess.Close(); err != nil { // its lease ends: the follower is elected
		t.Fatal(err)
	}
	select {
	case a := <-done:
		var er schedapi.ErrorResponse
		_ = json.Unmarshal([]byte(a.body), &er)
		if a.err != nil || a.status != http.StatusServiceUnavailable || er.Code != schedapi.CodeNotLeader || er.Leader != f.HTTPAddr() {
			t.Errorf("forwarded call after the election: %d %s (%v); want 503 not_leader naming the new leader %s", a.status, a.body, a.err, f.HTTPAddr())
		}
	case <-time.After(8 * time.Second):
		t.Fatalf("the forwarded call still hangs at the stalled leader 8 s after another was elected (follower leads: %v)", f.IsLeader())
	}
}
