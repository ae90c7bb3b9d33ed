package chart_test

// Was (found by a review): scheduler.blockSize (--block-size: "default: the
// cache nodes'; when set it must match theirs") rendered whatever the cache
// nodes' block size. A scheduler started with --block-size=256MiB next to a
// node of the default 128MiB answers /readyz and every placement 503
// ("this scheduler's block size is 256 MiB but the cache nodes use 128
// MiB"): a Deployment that never gets ready.

import (
	"testing"

	"github.com/locuscache/locus/internal/units"
)

// checkBlockSizesAgree: a --block-size given to the scheduler is the cache
// nodes' (theirs, or their default of 128MiB): otherwise the scheduler
// answers every call 503 and is never ready.
func checkBlockSizesAgree(t *testing.T, nc, sc *container) {
	t.Helper()
	v, ok := sc.flag("block-size")
	if !ok {
		return
	}
	node := "128MiB"
	if nv, ok := nc.flag("block-size"); ok {
		node = nv
	}
	s, err1 := units.ParseBytes(v)
	n, err2 := units.ParseBytes(node)
	if err1 != nil || err2 != nil || s != n {
		t.Errorf("scheduler --block-size=%s, cache nodes' %s (%v, %v): the scheduler is never ready", v, node, err1, err2)
	}
}
