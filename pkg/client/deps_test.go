package client_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
)

// TestImportGraph: an executor that embeds the client does not link the
// scheduler service or its dependencies (etcd's client, zap, memberlist):
// the client speaks the API through pkg/schedapi. It runs `go list -deps`
// (skipped with -short).
func TestImportGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !contains(deps, "github.com/locuscache/locus/pkg/schedapi") {
		t.Fatalf("go list -deps printed %d packages without pkg/schedapi: %.300s", len(deps), out)
	}
	for _, dep := range deps {
		for _, banned := range []string{"etcd", "go.uber.org/zap", "memberlist", "github.com/locuscache/locus/pkg/scheduler", "github.com/locuscache/locus/pkg/membership"} {
			if strings.Contains(dep, banned) {
				t.Errorf("pkg/client depends on %s (matching %q): executors would link it", dep, banned)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestSentinelsShared: the client's scheduler sentinels are the API's,
// which the scheduler exports under the same names: errors.Is agrees
// across the three packages.
func TestSentinelsShared(t *testing.T) {
	for _, tc := range []struct {
		name            string
		c, api, service error
		answer          client.SchedulerError // an error answer that maps to it
	}{
		{"ErrBadRequest", client.ErrBadRequest, schedapi.ErrBadRequest, scheduler.ErrBadRequest, client.SchedulerError{Status: 400}},
		{"ErrUnauthorized", client.ErrUnauthorized, schedapi.ErrUnauthorized, scheduler.ErrUnauthorized, client.SchedulerError{Status: 401}},
		{"ErrNotFound", client.ErrNotFound, schedapi.ErrNotFound, scheduler.ErrNotFound, client.SchedulerError{Status: 400, Code: schedapi.CodeNotFound}},
		{"ErrNotFound (older scheduler)", client.ErrNotFound, schedapi.ErrNotFound, scheduler.ErrNotFound, client.SchedulerError{Status: 404}},
		{"ErrConflict", client.ErrConflict, schedapi.ErrConflict, scheduler.ErrConflict, client.SchedulerError{Status: 409}},
		{"ErrTooLarge", client.ErrTooLarge, schedapi.ErrTooLarge, scheduler.ErrTooLarge, client.SchedulerError{Status: 413}},
		{"ErrNoNode", client.ErrNoNode, schedapi.ErrNoNode, scheduler.ErrNoNode, client.SchedulerError{Status: 503, Message: "no node available: all slots busy"}},
		{"ErrNotLeader", client.ErrNotLeader, schedapi.ErrNotLeader, scheduler.ErrNotLeader, client.SchedulerError{Status: 503, Leader: "10.0.0.2:8080"}},
		{"ErrSchedulerUnavailable", client.ErrSchedulerUnavailable, schedapi.ErrUnavailable, scheduler.ErrUnavailable, client.SchedulerError{Status: 503}},
	} {
		if tc.c != tc.api || tc.c != tc.service {
			t.Errorf("%s: client, schedapi and scheduler hold different values", tc.name)
		}
		err := error(&tc.answer)
		if !errors.Is(err, tc.c) || !errors.Is(err, tc.api) || !errors.Is(err, tc.service) {
			t.Errorf("%s: a %d answer: errors.Is client %v, schedapi %v, scheduler %v; want all true",
				tc.name, tc.answer.Status, errors.Is(err, tc.c), errors.Is(err, tc.api), errors.Is(err, tc.service))
		}
	}
}
