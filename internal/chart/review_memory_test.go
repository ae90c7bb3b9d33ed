package chart_test

// Was (found by a review): cachenode.memorySize (--memory-size, the RAM
// tier over the disk cache) rendered whatever the container's memory
// limit. The tier is the daemon's own anonymous memory (a node with
// --memory-size=1GiB, after reading a 1.3GB object through its gateway a
// few times: RssAnon 1.09GB, the mapped slabs apart), and the daemon
// checks it only against the machine's RAM (sysinfo, the node's, not the
// container's), so a tier above the limit gets the pod OOM-killed once it
// fills, again after every restart. The chart's own all-flags.yaml and
// quantities.yaml rendered an 8GiB tier under the default 4Gi limit.

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/locuscache/locus/internal/units"
)

// daemonMemoryMargin is what values.yaml asks the memory limit to keep
// for the daemon itself above the RAM tier.
const daemonMemoryMargin = units.GiB

// checkRAMTierFits: the RAM tier (--memory-size) plus the daemon's own
// ~1GiB fits in the container's memory limit, when it has one.
func checkRAMTierFits(t *testing.T, c *container) {
	t.Helper()
	v, ok := c.flag("memory-size")
	if !ok {
		return
	}
	tier, err := units.ParseBytes(v)
	if err != nil {
		t.Errorf("%s: --memory-size=%s: %v", c.Name, v, err)
		return
	}
	limit, ok := c.memoryLimit(t)
	if !ok {
		return
	}
	if tier+daemonMemoryMargin > limit {
		t.Errorf("%s: --memory-size=%s (%d bytes) plus the daemon's 1GiB does not fit its memory limit of %d bytes: OOM-killed once the RAM tier fills", c.Name, v, tier, limit)
	}
}

var memQuantity = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$`)

// memoryLimit is the container's resources.limits.memory in bytes.
func (c *container) memoryLimit(t *testing.T) (int64, bool) {
	t.Helper()
	for _, raw := range asList(c.pod.raw["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"]) {
		if raw["name"] != c.Name {
			continue
		}
		res, _ := raw["resources"].(map[string]any)
		limits, _ := res["limits"].(map[string]any)
		q, ok := limits["memory"]
		if !ok {
			return 0, false
		}
		s := fmt.Sprint(q)
		m := memQuantity.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("%s: memory limit %q: not a quantity this test reads", c.Name, s)
		}
		n, _ := strconv.ParseFloat(m[1], 64)
		mult := map[string]float64{"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60,
			"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}[m[2]]
		return int64(n * mult), true
	}
	return 0, false
}
