package chart_test

// Was (found by a review): the cache volume the chart sizes from cachenode.cacheSize (plus
// persistence.headroomPercent, default 10%) must hold the whole disk cache
// once formatted. Most CSI provisioners format claims as ext4 with
// mke2fs defaults (5% of the blocks reserved for root, journal, inode
// tables), and the daemon runs as a non-root user, so statfs's Bavail is
// what the cache gets; the cache itself also keeps min(5% of the file
// system, 1 GiB) free (pkg/cache/store.go slabsThatFit). With only 10%
// headroom, caches below ~45GiB do not fit: the node starts degraded
// ("disk full: ... caching on N of M slabs").
//
// The test formats a sparse file of exactly the claim the chart renders
// with mkfs.ext4 defaults, loop-mounts it (skipped when that is not
// possible: needs root and loop devices) and opens the real cache on it.

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/locuscache/locus/internal/units"
	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/cachetest"
)

func TestCacheVolumeFitsCacheOnExt4(t *testing.T) {
	bin := findHelm(t)
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skip("mkfs.ext4 not found")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to loop-mount an ext4 image")
	}
	for _, size := range []string{"1GiB", "2GiB", "5GiB", "10GiB", "15GiB", "20GiB", "30GiB", "40GiB", "60GiB", "100GiB", "200GiB"} {
		t.Run(size, func(t *testing.T) {
			m := render(t, bin, "", "--set", "cachenode.cacheSize="+size)
			node := m.one(t, "StatefulSet")
			nc := node.container(t, "cachenode")
			flagSize, _ := nc.flag("cache-size")
			cacheBytes, err := units.ParseBytes(flagSize)
			if err != nil {
				t.Fatal(err)
			}
			// The claim a new install gets, and the smallest one an upgrade
			// keeps (locus.cachenode.minVolumeMiB).
			mib := cacheBytes >> 20
			for _, claim := range []string{node.claimSize(t), fmt.Sprintf("%dMi", (mib*109+99)/100+1024)} {
				fitsExt4(t, claim, flagSize, cacheBytes, mkfs)
			}
		})
	}
}

func fitsExt4(t *testing.T, claim, flagSize string, cacheBytes int64, mkfs string) {
	t.Helper()
	{
		{
			volBytes, err := parseQuantity(claim)
			if err != nil {
				t.Fatal(err)
			}

			dir := t.TempDir()
			img := filepath.Join(dir, "vol.img")
			mnt := filepath.Join(dir, "mnt")
			if err := os.Mkdir(mnt, 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := os.Create(img)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(volBytes); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if out, err := exec.Command(mkfs, "-F", "-q", img).CombinedOutput(); err != nil {
				t.Fatalf("mkfs.ext4: %v\n%s", err, out)
			}
			if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
				t.Skipf("cannot loop-mount: %v\n%s", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", mnt).Run() })

			cdir := filepath.Join(mnt, "cache") // --cache-dir on the claim
			if err := os.Mkdir(cdir, 0o755); err != nil {
				t.Fatal(err)
			}
			c, err := cache.New(cache.Config{
				Origin:        cachetest.NewOrigin(),
				Dir:           cdir,
				CapacityBytes: cacheBytes,
				Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
			})
			if err != nil {
				t.Fatalf("cache.New on the chart's claim: %v", err)
			}
			defer c.Close()
			st := c.Stats()
			if st.Degraded {
				t.Errorf("--cache-size=%s on a claim of %s (ext4, mke2fs defaults): the cache starts degraded: %s",
					flagSize, claim, st.DegradedReason)
			}
		}
	}
}
