package testproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Reexec hands tests the binary of a daemon: the test binary itself, which
// runs the daemon when started with Env=1 (RunIf), or the daemon's package
// built once. Declare one per daemon as a package variable of its test
// harness; its zero build state is ready to use.
type Reexec struct {
	// Env is the environment variable that, set to "1", makes the test
	// binary run the daemon: e.g. LOCUS_NODETEST_DAEMON.
	Env string
	// Pkg is the daemon's main package relative to the module root, built
	// when the test binary cannot stand in: e.g. ./cmd/cachenode.
	Pkg string

	self  bool // RunIf was called: the test binary is the daemon
	build struct {
		once sync.Once
		dir  string // temporary directory of bin
		bin  string
		err  error
		out  []byte // go build's output
	}
}

// RunIf, called first in TestMain, runs main and exits with its code when
// the process was started with Env=1; otherwise it returns and Binary
// hands out the test binary itself from then on.
//
//	func TestMain(m *testing.M) {
//		daemon.RunIf(func() int { return run(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr) })
//		code := m.Run()
//		daemon.Remove()
//		os.Exit(code)
//	}
func (r *Reexec) RunIf(main func() int) {
	if os.Getenv(r.Env) == "1" {
		os.Exit(main())
	}
	r.self = true
}

// Binary returns the path of the daemon binary: the test binary after
// RunIf, else Pkg built with go build into a temporary directory, once per
// test binary (Remove deletes it). It fails the test if the build fails.
func (r *Reexec) Binary(t testing.TB) string {
	t.Helper()
	if r.self {
		self, err := os.Executable()
		if err != nil {
			t.Fatalf("testproc: %v", err)
		}
		return self
	}
	b := &r.build
	b.once.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			b.err = err
			return
		}
		if b.dir, err = os.MkdirTemp("", "locus-"+filepath.Base(r.Pkg)+"-"); err != nil {
			b.err = err
			return
		}
		b.bin = filepath.Join(b.dir, filepath.Base(r.Pkg))
		cmd := exec.Command("go", "build", "-o", b.bin, r.Pkg)
		cmd.Dir = root
		b.out, b.err = cmd.CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("testproc: go build %s: %v\n%s", r.Pkg, b.err, b.out)
	}
	return b.bin
}

// Environ returns the environment entries that make bin run the daemon:
// Env=1 when bin is this test binary, nothing for a built daemon.
func (r *Reexec) Environ(bin string) []string {
	if self, err := os.Executable(); err == nil && self == bin {
		return []string{r.Env + "=1"}
	}
	return nil
}

// Remove deletes the binary Binary built, if any. Call it from TestMain
// after m.Run.
func (r *Reexec) Remove() {
	if r.build.dir != "" {
		os.RemoveAll(r.build.dir)
	}
}

// ModuleRoot returns the directory holding go.mod, searched from the
// working directory (a test's package directory) up.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// LookPath finds the executable name in PATH, else in the bin directory of
// each GOPATH entry (from the environment, `go env GOPATH`, or ~/go),
// where go install puts it.
func LookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	var dirs []string
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, filepath.SplitList(gp)...)
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		dirs = append(dirs, filepath.SplitList(strings.TrimSpace(string(out)))...)
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "bin", name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH or $(go env GOPATH)/bin", name)
}
