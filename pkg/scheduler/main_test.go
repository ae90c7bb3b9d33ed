package scheduler_test

import (
	"os"
	"testing"

	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

func TestMain(m *testing.M) {
	schedulertest.MemberMain() // member processes of the multi-process tests
	os.Exit(m.Run())
}
