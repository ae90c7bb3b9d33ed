// Regression tests for bugs a review found (2026-12-01): each test's
// comment describes the bug as it was before the fix.
package origin_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin"
)

// listPage answers a ListObjectsV2 with one key and the given
// truncation elements (IsTruncated, NextContinuationToken), as a
// misbehaving store might.
func listPage(w http.ResponseWriter, key, truncation, size string) {
	w.Header().Set("Content-Type", "application/xml")
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bkt</Name><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys>%s`+
		`<Contents><Key>%s</Key><LastModified>2026-01-02T15:04:05.000Z</LastModified><ETag>&quot;e&quot;</ETag>%s</Contents></ListBucketResult>`,
		truncation, key, size)
}

// TestS3ListBrokenContinuation: a store that answers every page of a
// listing with the same NextContinuationToken made List loop for ever
// (the SDK's paginator does not stop on a repeated token unless told to),
// calling fn with the same keys again and again until the caller's
// context ended: 10,953 requests in 2s here. A truncated page without a
// NextContinuationToken ended the listing early with a nil error, a
// silently partial listing. Both now fail with an error naming the cause.
func TestS3ListBrokenContinuation(t *testing.T) {
	for _, tc := range []struct {
		name string
		next func(n int) string // the truncation elements of page n (from 1)
	}{
		{"same token", func(int) string {
			return `<IsTruncated>true</IsTruncated><NextContinuationToken>tok</NextContinuationToken>`
		}},
		{"token cycle", func(n int) string {
			return fmt.Sprintf(`<IsTruncated>true</IsTruncated><NextContinuationToken>tok%d</NextContinuationToken>`, n%3)
		}},
		{"no token", func(int) string { return `<IsTruncated>true</IsTruncated>` }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeS3{respond: func(w http.ResponseWriter, r *http.Request, n int) bool {
				if r.URL.Query().Get("list-type") != "2" {
					return false
				}
				listPage(w, fmt.Sprintf("k%05d", n), tc.next(n), "<Size>3</Size>")
				return true
			}}
			s, _ := newFake(t, f, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			calls := 0
			err := s.List(ctx, "s3://bkt/", func(origin.Info) error { calls++; return nil })
			if err == nil || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("List over a broken continuation = %v after %d entries and %d requests; want an error about the store's answer",
					err, calls, f.requests.Load())
			}
			if got := f.requests.Load(); got > 4 {
				t.Errorf("List made %d requests before giving up, want at most 4", got)
			}
		})
	}
}

// TestS3ListEntryWithoutSize: a listing entry without a Size element was
// listed with Size 0, and StatCache.List cached it, so the next Stat
// answered a 0-byte object (with the right ETag) for a TTL: the node
// served it empty. Now List fails naming the key.
func TestS3ListEntryWithoutSize(t *testing.T) {
	f := &fakeS3{respond: func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Query().Get("list-type") != "2" {
			return false
		}
		listPage(w, "key", `<IsTruncated>false</IsTruncated>`, "")
		return true
	}}
	s, _ := newFake(t, f, nil)
	c, err := origin.NewStatCache(s, origin.StatCacheConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lerr := c.List(ctx, "s3://bkt/", func(info origin.Info) error {
		if info.Size == 0 {
			t.Errorf("List yielded %s with Size 0; the store sent no Size (object of %d bytes)", info.URI, len(f.data))
		}
		return nil
	})
	if lerr == nil {
		t.Errorf("List of an answer without Size = nil, want an error")
	}
	info, err := c.Stat(ctx, "s3://bkt/key")
	if err != nil || info.Size != int64(len(f.data)) {
		t.Fatalf("StatCache.Stat after the List = (size %d, %v), want size %d from HEAD", info.Size, err, len(f.data))
	}
}
