package origin_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// TestS3StatObjectHeaders: Stat returns the standard headers S3 keeps
// with an object (Content-Encoding, Content-Disposition, Cache-Control,
// Content-Language, Expires) as the store sends them, each on its own, and
// none for an object stored without them. Was: only Content-Type and
// x-amz-meta-* were kept, so the gateway served a gzip-encoded object
// without Content-Encoding.
func TestS3StatObjectHeaders(t *testing.T) {
	g := origintest.StartVersityGW(t)
	store := g.Store(t)
	ctx := context.Background()
	expires := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	type headers struct{ ContentEncoding, ContentDisposition, CacheControl, ContentLanguage, Expires string }
	for _, tc := range []struct {
		key  string
		set  func(*s3.PutObjectInput)
		want headers
	}{
		{"enc.gz", func(in *s3.PutObjectInput) { in.ContentEncoding = aws.String("gzip") },
			headers{ContentEncoding: "gzip"}},
		{"disp.csv", func(in *s3.PutObjectInput) { in.ContentDisposition = aws.String(`attachment; filename="report 1.csv"`) },
			headers{ContentDisposition: `attachment; filename="report 1.csv"`}},
		{"cache.bin", func(in *s3.PutObjectInput) { in.CacheControl = aws.String("public, max-age=3600") },
			headers{CacheControl: "public, max-age=3600"}},
		{"lang.txt", func(in *s3.PutObjectInput) { in.ContentLanguage = aws.String("de-DE") },
			headers{ContentLanguage: "de-DE"}},
		{"exp.bin", func(in *s3.PutObjectInput) { in.Expires = aws.Time(expires) },
			headers{Expires: expires.Format("Mon, 02 Jan 2006 15:04:05 GMT")}},
		{"plain.bin", func(*s3.PutObjectInput) {}, headers{}},
	} {
		data := []byte("bytes of " + tc.key)
		in := &s3.PutObjectInput{Bucket: aws.String(g.Bucket), Key: aws.String(tc.key),
			Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))}
		tc.set(in)
		if _, err := g.Client().PutObject(ctx, in); err != nil {
			t.Fatalf("put %s: %v", tc.key, err)
		}
		info, err := store.Stat(ctx, g.URI(tc.key))
		if err != nil {
			t.Fatalf("Stat %s: %v", tc.key, err)
		}
		got := headers{info.ContentEncoding, info.ContentDisposition, info.CacheControl, info.ContentLanguage, info.Expires}
		if got != tc.want {
			t.Errorf("Stat %s: headers %+v, want %+v", tc.key, got, tc.want)
		}
	}
}

// TestS3DirectoryMarker: a key ending in "/" that S3 holds as an object (a
// "directory marker", as the S3 console's "Create folder" writes) is an
// object to Stat and ReadAt, as to S3; a prefix that is not one is
// ErrNotFound. Was: both refused with ErrInvalidURI before asking the
// store, so the gateway answered 404 for an existing marker.
func TestS3DirectoryMarker(t *testing.T) {
	g := origintest.StartVersityGW(t)
	store := g.Store(t)
	ctx := context.Background()
	etag := g.Put(t, "dir/", nil)
	g.Put(t, "dir/a.bin", []byte("a"))
	g.Put(t, "implicit/a.bin", []byte("a"))

	info, err := store.Stat(ctx, g.URI("dir/"))
	if err != nil {
		t.Fatalf("Stat of the marker dir/: %v, want its Info", err)
	}
	if info.Size != 0 || info.Version != origin.NormalizeETag(etag) || info.URI != g.URI("dir/") {
		t.Errorf("Stat of the marker dir/: %+v, want size 0, version %s", info, etag)
	}
	n, err := store.ReadAt(ctx, info.URI, info.Version, make([]byte, 1), 0)
	if n != 0 || err != io.EOF {
		t.Errorf("ReadAt of the empty marker: %d, %v; want 0, io.EOF", n, err)
	}
	for _, key := range []string{"implicit/", "nothing/"} {
		if _, err := store.Stat(ctx, g.URI(key)); !errors.Is(err, origin.ErrNotFound) {
			t.Errorf("Stat of the prefix %s (no marker): %v, want ErrNotFound", key, err)
		}
	}
	if _, err := store.Stat(ctx, "s3://"+g.Bucket+"/"); !errors.Is(err, origin.ErrInvalidURI) {
		t.Errorf("Stat of the bucket (empty key): %v, want ErrInvalidURI", err)
	}
}
