package chart_test

// Was (found by a review): cachenode.extraArgs come after the chart's flags and win ("a
// repeated flag takes its last value", values.yaml), and the chart honours
// that for --drain-timeout (locus.validateGrace reads extraArgs). But the
// cache volume is sized from cachenode.cacheSize alone: with
// extraArgs={--cache-size=500GiB} the daemon gets --cache-size=500GiB on a
// 110Gi claim (or emptyDir sizeLimit), renders silently, and the node
// starts degraded (or, as an emptyDir, is evicted past its sizeLimit).

import "testing"

func TestExtraArgsCacheSizeSizesVolume(t *testing.T) {
	bin := findHelm(t)
	for _, persist := range []string{"true", "false"} {
		t.Run("persistence="+persist, func(t *testing.T) {
			out, err := helm(t, bin, "template", "locus", ".", "--namespace", "lake",
				"--set", "cachenode.extraArgs={--cache-size=500GiB}",
				"--set", "cachenode.persistence.enabled="+persist)
			if err != nil {
				return // refusing the override would be a fix too
			}
			m := parseManifests(t, out)
			node := m.one(t, "StatefulSet")
			checkCacheVolume(t, node, node.container(t, "cachenode"))
		})
	}
}
