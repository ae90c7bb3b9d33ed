// Package objuri parses and checks the URIs that name objects in Locus:
// s3://bucket/key and file:///abs/path (DESIGN.md's data model), in their
// canonical forms. It is pure (no I/O) and a leaf, so that the scheduler's
// API types and clients can check a split's URI exactly as the cache
// nodes' origin will, without linking an S3 client; package origin
// re-exports it.
package objuri

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Sentinel errors, compared with errors.Is (package origin re-exports them).
var (
	// ErrInvalidURI: the URI is malformed or not canonical (see Parse).
	ErrInvalidURI = errors.New("invalid object URI")
	// ErrOutsideRoot: a file:// URI names a path outside the configured
	// root; Parse refuses every ".." segment with it.
	ErrOutsideRoot = errors.New("path outside the file root")
	// ErrUnsupportedScheme: neither s3:// nor file://.
	ErrUnsupportedScheme = errors.New("unsupported URI scheme")
)

// URI schemes Locus understands.
const (
	SchemeS3   = "s3"
	SchemeFile = "file"
)

// URI is a parsed object URI (or listing prefix).
//
//	s3://bucket/key          Scheme "s3",   Bucket "bucket", Key "key"
//	file:///abs/path         Scheme "file", Path "/abs/path"
//
// S3 keys are taken literally: no percent-decoding, "." and ".." are
// ordinary characters (S3 itself has no directories). file:// paths are
// percent-decoded (RFC 8089) and must be canonical: absolute, no empty, "."
// or ".." segments, no NUL, no query or fragment, host empty or
// "localhost". Canonical means one file has one spelling, which matters
// because cached bytes are keyed by the URI string: key by String(), which
// renders the canonical form.
type URI struct {
	Scheme string
	Bucket string // s3 only
	Key    string // s3 only; may be empty or end in "/" for a prefix
	Path   string // file only; decoded; may end in "/" for a prefix
}

// String renders the canonical URI text.
func (u URI) String() string {
	switch u.Scheme {
	case SchemeS3:
		return "s3://" + u.Bucket + "/" + u.Key
	case SchemeFile:
		return (&url.URL{Scheme: SchemeFile, Path: u.Path}).String()
	}
	return u.Scheme + "://?"
}

// IsPrefix reports whether the URI can only be a listing prefix (an S3 URI
// with an empty key or a key ending in "/", a file URI ending in "/").
func (u URI) IsPrefix() bool {
	switch u.Scheme {
	case SchemeS3:
		return u.Key == "" || strings.HasSuffix(u.Key, "/")
	case SchemeFile:
		return strings.HasSuffix(u.Path, "/")
	}
	return false
}

// Scheme returns the scheme of a URI string ("s3", "file") without parsing
// the rest, or an error wrapping ErrInvalidURI when there is no "scheme://".
func Scheme(uri string) (string, error) {
	scheme, _, ok := strings.Cut(uri, "://")
	if !ok || scheme == "" {
		return "", fmt.Errorf("%w: %q has no scheme (want s3://bucket/key or file:///path)", ErrInvalidURI, uri)
	}
	return strings.ToLower(scheme), nil
}

// Parse parses an object URI or a listing prefix. Errors wrap
// ErrInvalidURI (malformed or non-canonical), ErrOutsideRoot (a file path
// with a ".." segment, refused whether or not it would escape) or
// ErrUnsupportedScheme (neither s3 nor file).
func Parse(s string) (URI, error) {
	scheme, err := Scheme(s)
	if err != nil {
		return URI{}, err
	}
	switch scheme {
	case SchemeS3:
		return parseS3(s)
	case SchemeFile:
		return parseFile(s)
	}
	return URI{}, fmt.Errorf("%w: %q (want s3:// or file://)", ErrUnsupportedScheme, s)
}

func parseS3(s string) (URI, error) {
	if !strings.HasPrefix(s, "s3://") {
		return URI{}, fmt.Errorf("%w: %q: write the scheme as lower-case s3://", ErrInvalidURI, s)
	}
	rest := s[len("s3://"):]
	bucket, key, _ := strings.Cut(rest, "/")
	if err := checkBucket(bucket); err != nil {
		return URI{}, fmt.Errorf("%w: %q: %v", ErrInvalidURI, s, err)
	}
	if !utf8.ValidString(key) {
		return URI{}, fmt.Errorf("%w: %q: key is not valid UTF-8", ErrInvalidURI, s)
	}
	if len(key) > 1024 {
		return URI{}, fmt.Errorf("%w: key of %d bytes is longer than S3's 1024", ErrInvalidURI, len(key))
	}
	if strings.ContainsRune(key, 0) {
		return URI{}, fmt.Errorf("%w: %q: key contains NUL", ErrInvalidURI, s)
	}
	return URI{Scheme: SchemeS3, Bucket: bucket, Key: key}, nil
}

// checkBucket applies S3's bucket naming rules, loosened to accept the
// upper-case letters and underscores of legacy buckets and S3-compatible
// stores.
func checkBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket name %q must have 3 to 63 characters", b)
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
		if !ok {
			return fmt.Errorf("bucket name %q has character %q", b, c)
		}
	}
	return nil
}

func parseFile(s string) (URI, error) {
	if !strings.HasPrefix(s, "file://") {
		return URI{}, fmt.Errorf("%w: %q: write file URIs as file:///absolute/path", ErrInvalidURI, s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return URI{}, fmt.Errorf("%w: %q: %v", ErrInvalidURI, s, err)
	}
	if u.Host != "" && u.Host != "localhost" {
		return URI{}, fmt.Errorf("%w: %q: file URIs name local files; host %q must be empty or localhost", ErrInvalidURI, s, u.Host)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") {
		return URI{}, fmt.Errorf("%w: %q: file URIs take no user, query or fragment", ErrInvalidURI, s)
	}
	p := u.Path
	if !strings.HasPrefix(p, "/") {
		return URI{}, fmt.Errorf("%w: %q: path must be absolute", ErrInvalidURI, s)
	}
	if strings.ContainsRune(p, 0) {
		return URI{}, fmt.Errorf("%w: %q: path contains NUL", ErrInvalidURI, s)
	}
	if !utf8.ValidString(p) {
		return URI{}, fmt.Errorf("%w: %q: path is not valid UTF-8", ErrInvalidURI, s)
	}
	segs := strings.Split(p[1:], "/")
	for i, seg := range segs {
		switch {
		case seg == "..":
			return URI{}, fmt.Errorf("%w: %q: \"..\" segments are not allowed", ErrOutsideRoot, s)
		case seg == ".":
			return URI{}, fmt.Errorf("%w: %q: \".\" segments are not canonical", ErrInvalidURI, s)
		case seg == "" && i != len(segs)-1:
			return URI{}, fmt.Errorf("%w: %q: empty path segment (\"//\") is not canonical", ErrInvalidURI, s)
		}
	}
	return URI{Scheme: SchemeFile, Path: p}, nil
}

// CheckObject checks that s names an object in canonical form: it parses,
// is not a listing prefix, and is spelled as URI.String renders it. Cached
// bytes and ring keys use the URI text, so one object must have one
// spelling everywhere (a client, the scheduler and the cache nodes).
// Errors wrap ErrInvalidURI, ErrOutsideRoot or ErrUnsupportedScheme.
func CheckObject(s string) error {
	u, err := Parse(s)
	if err != nil {
		return err
	}
	if u.IsPrefix() {
		return fmt.Errorf("%w: %q names a prefix, not an object", ErrInvalidURI, s)
	}
	if c := u.String(); c != s {
		return fmt.Errorf("%w: %q is not canonical (%q)", ErrInvalidURI, s, c)
	}
	return nil
}
