package placement_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/locuscache/locus/pkg/placement"
	"github.com/locuscache/locus/pkg/placement/placementtest"
)

// TestScripts runs the golden-file scripts in testdata/. Regenerate the
// expected outputs with: go test ./pkg/placement -run TestScripts -rewrite
// (then read the diff: the goldens are the specification).
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scripts in testdata/")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			d, err := placementtest.NewDriver(placement.Config{})
			if err != nil {
				t.Fatal(err)
			}
			placementtest.RunScript(t, f, func(c placementtest.Command) string {
				out := d.Run(c)
				if strings.Contains(out, "VERIFY FAILED") {
					t.Errorf("%s: %s", c.Pos, out)
				}
				return out
			})
		})
	}
}
