package schedapi

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly: the package links nothing but the standard
// library and objuri (itself standard-library only, and checked here too),
// so every client of the scheduler can embed it. It runs the go command
// (skipped with -short).
func TestStandardLibraryOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != "github.com/locuscache/locus/pkg/schedapi" && dep != "github.com/locuscache/locus/pkg/objuri" {
			t.Errorf("schedapi depends on %s: it must import only the standard library and objuri", dep)
		}
	}
}
