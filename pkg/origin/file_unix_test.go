//go:build unix

package origin_test

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin"
)

// TestFileSpecialFiles: a named pipe (or another non-regular file) under
// the root is not an object. Opening a FIFO for reading blocks until a
// writer appears, so a Stat or ReadAt that opened it plainly would hang
// (and leak its goroutine) however the caller's context ends.
func TestFileSpecialFiles(t *testing.T) {
	f := newFileFixture(t)
	if err := syscall.Mkfifo(filepath.Join(f.root, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	uri := f.uri("fifo")
	for _, op := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Stat", func(ctx context.Context) error { _, err := f.store.Stat(ctx, uri); return err }},
		{"ReadAt", func(ctx context.Context) error {
			_, err := f.store.ReadAt(ctx, uri, "", make([]byte, 8), 0)
			return err
		}},
	} {
		t.Run(op.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- op.call(context.Background()) }()
			select {
			case err := <-done:
				if !errors.Is(err, origin.ErrNotFound) {
					t.Errorf("%s(%s) = %v, want ErrNotFound", op.name, uri, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s(%s) still blocked after 5s (opened a FIFO waiting for a writer)", op.name, uri)
			}
		})
	}
}
