package origintest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locuscache/locus/pkg/origin"
)

// MemStore is an in-memory origin.Store. Each Put creates a new version
// ("m1", "m2", ...), so tests can rewrite objects and watch ErrVersionChanged.
// Hook, when set, runs before every call and can inject faults. Safe for
// concurrent use.
type MemStore struct {
	// Hook is called with the operation ("stat", "read", "list") and the
	// URI (or prefix) before the store does anything; a non-nil error is
	// returned as the call's result. Set it before use.
	Hook func(op, uri string) error

	mu      sync.Mutex // guards objects and seq
	objects map[string]memObject
	seq     int

	stats, reads, lists atomic.Int64
	readBytes           atomic.Int64
}

type memObject struct {
	data    []byte
	version string
	mod     time.Time
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{objects: make(map[string]memObject)} }

// Put stores a copy of data under uri as a new version and returns its Info.
func (m *MemStore) Put(uri string, data []byte) origin.Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	o := memObject{data: slices.Clone(data), version: "m" + strconv.Itoa(m.seq), mod: time.Unix(int64(m.seq), 0)}
	m.objects[uri] = o
	return origin.Info{URI: uri, Size: int64(len(data)), Version: o.version, ModTime: o.mod}
}

// Delete removes uri.
func (m *MemStore) Delete(uri string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, uri)
}

// Counts returns how many Stat, ReadAt and List calls were made, and the
// bytes ReadAt returned.
func (m *MemStore) Counts() (stats, reads, lists, readBytes int64) {
	return m.stats.Load(), m.reads.Load(), m.lists.Load(), m.readBytes.Load()
}

func (m *MemStore) hook(op, uri string) error {
	if m.Hook != nil {
		return m.Hook(op, uri)
	}
	return nil
}

func (m *MemStore) get(uri string) (memObject, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[uri]
	if !ok {
		return memObject{}, fmt.Errorf("%w: %s", origin.ErrNotFound, uri)
	}
	return o, nil
}

// Stat implements origin.Store.
func (m *MemStore) Stat(ctx context.Context, uri string) (origin.Info, error) {
	m.stats.Add(1)
	if err := m.hook("stat", uri); err != nil {
		return origin.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return origin.Info{}, err
	}
	o, err := m.get(uri)
	if err != nil {
		return origin.Info{}, err
	}
	return origin.Info{URI: uri, Size: int64(len(o.data)), Version: o.version, ModTime: o.mod}, nil
}

// ReadAt implements origin.Store.
func (m *MemStore) ReadAt(ctx context.Context, uri, version string, p []byte, off int64) (int, error) {
	m.reads.Add(1)
	if err := m.hook("read", uri); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("%w: offset %d", origin.ErrRange, off)
	}
	o, err := m.get(uri)
	if err != nil {
		return 0, err
	}
	if version != "" && version != o.version {
		return 0, fmt.Errorf("%w: %s is at %s, not %s", origin.ErrVersionChanged, uri, o.version, version)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= int64(len(o.data)) {
		return 0, io.EOF
	}
	n := copy(p, o.data[off:])
	m.readBytes.Add(int64(n))
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// List implements origin.Store, in byte order of URIs as S3 lists keys.
func (m *MemStore) List(ctx context.Context, prefix string, fn func(origin.Info) error) error {
	m.lists.Add(1)
	if err := m.hook("list", prefix); err != nil {
		return err
	}
	m.mu.Lock()
	var infos []origin.Info
	for uri, o := range m.objects {
		if strings.HasPrefix(uri, prefix) {
			infos = append(infos, origin.Info{URI: uri, Size: int64(len(o.data)), Version: o.version, ModTime: o.mod})
		}
	}
	m.mu.Unlock()
	slices.SortFunc(infos, func(a, b origin.Info) int { return strings.Compare(a.URI, b.URI) })
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

var _ origin.Store = (*MemStore)(nil)
