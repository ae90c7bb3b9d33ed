package objuri_test

import (
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/locuscache/locus/pkg/objuri"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in      string
		want    objuri.URI
		wantErr error
		str     string // canonical String(); "" means same as in
	}{
		{in: "s3://bucket/key", want: objuri.URI{Scheme: "s3", Bucket: "bucket", Key: "key"}},
		{in: "s3://bucket/a/b/c.parquet", want: objuri.URI{Scheme: "s3", Bucket: "bucket", Key: "a/b/c.parquet"}},
		{in: "s3://bucket/a%20b", want: objuri.URI{Scheme: "s3", Bucket: "bucket", Key: "a%20b"}}, // literal
		{in: "s3://bucket/../x", want: objuri.URI{Scheme: "s3", Bucket: "bucket", Key: "../x"}},   // S3 has no directories
		{in: "s3://bucket/", want: objuri.URI{Scheme: "s3", Bucket: "bucket", Key: ""}},
		{in: "s3://bucket", want: objuri.URI{Scheme: "s3", Bucket: "bucket"}, str: "s3://bucket/"},
		{in: "s3://My_Bucket.1/k", want: objuri.URI{Scheme: "s3", Bucket: "My_Bucket.1", Key: "k"}},
		{in: "S3://bucket/k", wantErr: objuri.ErrInvalidURI},
		{in: "s3://b/k", wantErr: objuri.ErrInvalidURI},
		{in: "s3:///k", wantErr: objuri.ErrInvalidURI},
		{in: "s3://bu cket/k", wantErr: objuri.ErrInvalidURI},
		{in: "s3://bucket/k\x00", wantErr: objuri.ErrInvalidURI},
		{in: "s3://bucket/\xff", wantErr: objuri.ErrInvalidURI},

		{in: "file:///data/x.parquet", want: objuri.URI{Scheme: "file", Path: "/data/x.parquet"}},
		{in: "file://localhost/data/x", want: objuri.URI{Scheme: "file", Path: "/data/x"}, str: "file:///data/x"},
		{in: "file:///data/a%20b", want: objuri.URI{Scheme: "file", Path: "/data/a b"}},
		{in: "file:///data/dir/", want: objuri.URI{Scheme: "file", Path: "/data/dir/"}},
		{in: "file:///", want: objuri.URI{Scheme: "file", Path: "/"}},
		{in: "file:///data/../etc/passwd", wantErr: objuri.ErrOutsideRoot},
		{in: "file:///data/%2e%2e/etc/passwd", wantErr: objuri.ErrOutsideRoot},
		{in: "file:///data/%2E%2E%2Fetc/passwd", wantErr: objuri.ErrOutsideRoot},
		{in: "file:///data/..", wantErr: objuri.ErrOutsideRoot},
		{in: "file:///data/./x", wantErr: objuri.ErrInvalidURI},
		{in: "file:///data//x", wantErr: objuri.ErrInvalidURI},
		{in: "file:///data/x%00", wantErr: objuri.ErrInvalidURI},
		{in: "file:///data/x?y=1", wantErr: objuri.ErrInvalidURI},
		{in: "file:///data/x#frag", wantErr: objuri.ErrInvalidURI},
		{in: "file://evil.example.com/data/x", wantErr: objuri.ErrInvalidURI},
		{in: "file://user@localhost/data/x", wantErr: objuri.ErrInvalidURI},
		{in: "file:/data/x", wantErr: objuri.ErrInvalidURI},
		{in: "file://data/x", wantErr: objuri.ErrInvalidURI}, // "data" would be a host
		{in: "file:///data/%zz", wantErr: objuri.ErrInvalidURI},

		{in: "hdfs://nn/x", wantErr: objuri.ErrUnsupportedScheme},
		{in: "/data/x", wantErr: objuri.ErrInvalidURI},
		{in: "", wantErr: objuri.ErrInvalidURI},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := objuri.Parse(tc.in)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("ParseURI(%q) = (%+v, %v), want error %v", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseURI(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("ParseURI(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			str := tc.str
			if str == "" {
				str = tc.in
			}
			if got.String() != str {
				t.Fatalf("String() = %q, want %q", got.String(), str)
			}
			// The canonical form parses to the same URI.
			again, err := objuri.Parse(got.String())
			if err != nil || again != got {
				t.Fatalf("ParseURI(String()) = (%+v, %v), want %+v", again, err, got)
			}
		})
	}
}

func FuzzParseURI(f *testing.F) {
	for _, s := range []string{"s3://bucket/key", "file:///data/x", "file:///a/%2e%2e/b", "file://localhost/x/", "s3://b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := objuri.Parse(s)
		if err != nil {
			return
		}
		again, err := objuri.Parse(u.String())
		if err != nil || again != u {
			t.Fatalf("ParseURI(%q) = %+v; its String() %q parses to (%+v, %v)", s, u, u.String(), again, err)
		}
		if u.Scheme == "file" {
			p := strings.TrimSuffix(u.Path, "/")
			if p != "" && path.Clean(p) != p {
				t.Fatalf("ParseURI(%q) accepted non-canonical path %q", s, u.Path)
			}
		}
	})
}
