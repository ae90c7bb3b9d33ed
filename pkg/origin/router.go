package origin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Router is a Store that dispatches each URI to the store configured for
// its scheme and rejects the others with ErrUnsupportedScheme: a cache
// node without --origin-file-root serves no file:// URI at all.
type Router struct {
	routes map[string]Store // scheme → store; read-only after NewRouter
}

// NewRouter builds a Router from scheme → store, e.g.
// {"s3": s3Store, "file": fileStore}. Nil stores are left out, so callers
// can pass optional stores directly.
func NewRouter(routes map[string]Store) (*Router, error) {
	r := &Router{routes: make(map[string]Store, len(routes))}
	for scheme, s := range routes {
		if scheme == "" || scheme != strings.ToLower(scheme) || strings.Contains(scheme, ":") {
			return nil, fmt.Errorf("origin: router scheme %q must be lower-case and without \":\"", scheme)
		}
		if s == nil || isNilStore(s) {
			continue
		}
		r.routes[scheme] = s
	}
	if len(r.routes) == 0 {
		return nil, errors.New("origin: router has no stores; configure an S3 origin or a file root")
	}
	return r, nil
}

// isNilStore catches typed nil pointers such as a (*FileStore)(nil) that
// an unset optional store leaves behind.
func isNilStore(s Store) bool {
	switch v := s.(type) {
	case *FileStore:
		return v == nil
	case *S3Store:
		return v == nil
	case *StatCache:
		return v == nil
	case *Router:
		return v == nil
	}
	return false
}

// Schemes lists the configured schemes, sorted.
func (r *Router) Schemes() []string {
	out := make([]string, 0, len(r.routes))
	for s := range r.routes {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func (r *Router) route(uri string) (Store, error) {
	scheme, err := Scheme(uri)
	if err != nil {
		return nil, err
	}
	s, ok := r.routes[scheme]
	if !ok {
		return nil, fmt.Errorf("%w: %q: this node serves only %s:// URIs", ErrUnsupportedScheme, uri, strings.Join(r.Schemes(), ":// and "))
	}
	return s, nil
}

// Stat implements Store.
func (r *Router) Stat(ctx context.Context, uri string) (Info, error) {
	s, err := r.route(uri)
	if err != nil {
		return Info{}, err
	}
	return s.Stat(ctx, uri)
}

// ReadAt implements Store.
func (r *Router) ReadAt(ctx context.Context, uri, version string, p []byte, off int64) (int, error) {
	s, err := r.route(uri)
	if err != nil {
		return 0, err
	}
	return s.ReadAt(ctx, uri, version, p, off)
}

// List implements Store.
func (r *Router) List(ctx context.Context, prefix string, fn func(Info) error) error {
	s, err := r.route(prefix)
	if err != nil {
		return err
	}
	return s.List(ctx, prefix, fn)
}
