package chart_test

// Was (found by a review): an install sizes the cache claim from the values
// and accepts any cachenode.persistence.size at least the cache size, and
// any persistence.headroomPercent; but an upgrade kept the live claim only
// if it was at least locus.cachenode.minVolumeMiB (the cache x 1.09 +
// 1GiB), whatever the values. So a release installed with
// persistence.size=100Gi for the default 100GiB cache, with
// headroomPercent=5, or with the chart's own all-flags.yaml (2200Gi for a
// 2TiB cache) rendered, and then every `helm upgrade` with the same values
// (an image bump) failed with "the cache size ... no longer fits the
// running StatefulSet's claims" and the steps to grow claims that had not
// changed.

import (
	"strings"
	"testing"
)

func TestUpgradeWithInstallValuesKeepsClaim(t *testing.T) {
	bin := findHelm(t)
	for _, tc := range []struct {
		name string
		file string
		set  []string
	}{
		{name: "defaults"},
		{name: "persistence.size equal to the cache", set: []string{"cachenode.persistence.size=100Gi"}},
		{name: "headroom 5%", set: []string{"cachenode.persistence.headroomPercent=5"}},
		{name: "headroom 0% on 1TiB", set: []string{"cachenode.cacheSize=1TiB", "cachenode.persistence.headroomPercent=0"}},
		{name: "all-flags.yaml", file: "all-flags.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sets []string
			for _, s := range tc.set {
				sets = append(sets, "--set", s)
			}
			install := render(t, bin, tc.file, sets...).one(t, "StatefulSet").claimSize(t)

			// The same values again, on the StatefulSet the install made.
			args := append([]string{"template", "locus", ".", "--namespace", "lake", "--dry-run=server",
				"--kube-apiserver", fakeAPIServer(t, liveStatefulSet(install))}, valuesArgs(t, tc.file)...)
			out, err := helm(t, bin, append(args, sets...)...)
			if err != nil {
				t.Fatalf("install rendered a claim of %s; an upgrade with the same values %v fails:\n%s", install, tc.set, firstLines(strings.TrimSpace(out), 2))
			}
			if got := parseManifests(t, out).one(t, "StatefulSet").claimSize(t); got != install {
				t.Errorf("upgrade with the same values: claim %s, want the live %s", got, install)
			}
		})
	}
}
