package origintest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

func TestMemStore(t *testing.T) {
	m := origintest.NewMemStore()
	ctx := context.Background()
	v1 := m.Put("s3://b/k", []byte("hello"))
	p := make([]byte, 10)
	n, err := m.ReadAt(ctx, "s3://b/k", v1.Version, p, 1)
	if n != 4 || err != io.EOF || string(p[:n]) != "ello" {
		t.Fatalf("ReadAt = (%d, %v, %q)", n, err, p[:n])
	}
	m.Put("s3://b/k", []byte("world"))
	if _, err := m.ReadAt(ctx, "s3://b/k", v1.Version, p, 0); !errors.Is(err, origin.ErrVersionChanged) {
		t.Fatalf("stale read: %v", err)
	}
	if _, err := m.Stat(ctx, "s3://b/none"); !errors.Is(err, origin.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	m.Hook = func(op, uri string) error {
		if op == "read" {
			return origin.ErrUnavailable
		}
		return nil
	}
	if _, err := m.ReadAt(ctx, "s3://b/k", "", p, 0); !errors.Is(err, origin.ErrUnavailable) {
		t.Fatalf("hook: %v", err)
	}
	stats, reads, lists, _ := m.Counts()
	if stats != 1 || reads != 3 || lists != 0 {
		t.Fatalf("counts = %d %d %d", stats, reads, lists)
	}
}

func TestFindVersityGWMessage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("GOPATH", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	if _, err := origintest.FindVersityGW(); err == nil {
		// `go env GOPATH` is not on the emptied PATH, so nothing can be found.
		t.Fatal("found a versitygw binary with an empty PATH and GOPATH")
	} else if want := origintest.InstallHint; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say how to install (%s)", err, want)
	}
}

// recordingTB captures Skipf/Fatalf instead of ending the test.
type recordingTB struct {
	testing.TB
	skipped, failed string
}

type stop struct{}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	panic(stop{})
}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(stop{})
}

func TestStartVersityGWWithoutBinary(t *testing.T) {
	for _, tc := range []struct {
		env      map[string]string
		wantFail bool
	}{
		{map[string]string{origintest.RequireEnv: "", "LOCUS_REQUIRE_TOOLS": ""}, false},
		{map[string]string{origintest.RequireEnv: "1", "LOCUS_REQUIRE_TOOLS": ""}, true},
		{map[string]string{origintest.RequireEnv: "", "LOCUS_REQUIRE_TOOLS": "1"}, true},
	} {
		t.Setenv("PATH", t.TempDir())
		t.Setenv("GOPATH", t.TempDir())
		t.Setenv("HOME", t.TempDir())
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		rec := &recordingTB{TB: t}
		func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(stop); !ok {
						panic(r)
					}
				}
			}()
			origintest.StartVersityGW(rec)
		}()
		msg := rec.skipped
		if tc.wantFail {
			msg = rec.failed
		}
		if msg == "" || (tc.wantFail && rec.skipped != "") || !strings.Contains(msg, origintest.InstallHint) {
			t.Errorf("env %v: skipped %q, failed %q; want %s with the install hint", tc.env, rec.skipped, rec.failed, map[bool]string{true: "a failure", false: "a skip"}[tc.wantFail])
		}
	}
}
