package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// TestReviewCompleteBatchUnknownOnFreshLeader: a complete batch whose
// tasks are all unknown, sent to a leader that has changed no counter in
// its term yet, must answer 200 with a per-task not_found (as it does
// standalone and after any other call), not 503 not_leader from the leader
// itself.
func TestReviewCompleteBatchUnknownOnFreshLeader(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	s := schedulertest.Start(t, scheduler.Config{
		NodeID:     "sched-0",
		Membership: threeNodes(t),
		Etcd:       scheduler.EtcdConfig{Endpoints: e.Endpoints, SessionTTL: 2 * time.Second, Prefix: "/" + t.Name() + "/"},
	})
	waitLeader(t, []*scheduler.Scheduler{s}, 10*time.Second)
	c := schedulertest.NewClient(s.HTTPAddr())
	ctx := context.Background()
	cr, err := c.CompleteBatch(ctx, schedapi.CompleteBatchRequest{Job: "j", Tasks: []schedapi.CompleteTask{{Task: "nope", Bytes: 1}}})
	if err != nil {
		t.Fatalf("complete batch of an unknown task on the leader: %v (status %d, code %q); want 200 with a per-task not_found", err, statusOf(err), codeOf(err))
	}
	if len(cr.Results) != 1 || cr.Results[0].Code != schedapi.CodeNotFound {
		t.Errorf("results %+v, want one not_found", cr.Results)
	}
}
