package gateway

import (
	"context"
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

func listPage(t *testing.T, gw *Gateway, target string) listBucketResult {
	t.Helper()
	f := &fixture{gw: gw}
	w := f.do("GET", target)
	if w.Code != 200 {
		t.Fatalf("GET %s: status %d body %s", target, w.Code, w.Body)
	}
	var res listBucketResult
	if err := xml.Unmarshal(w.Body.Bytes(), &res); err != nil {
		t.Fatalf("GET %s: %v\n%s", target, err, w.Body)
	}
	return res
}

func TestListObjects(t *testing.T) {
	f := newFixture(t, nil)
	res := listPage(t, f.gw, "/bkt?list-type=2&delimiter=/")
	var keys []string
	for _, c := range res.Contents {
		keys = append(keys, c.Key)
	}
	if want := []string{"empty", "obj"}; !slices.Equal(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
	if len(res.CommonPrefixes) != 1 || res.CommonPrefixes[0].Prefix != "dir/" {
		t.Errorf("common prefixes %+v, want dir/", res.CommonPrefixes)
	}
	if res.KeyCount == nil || *res.KeyCount != 3 || res.IsTruncated {
		t.Errorf("KeyCount %v truncated %v", res.KeyCount, res.IsTruncated)
	}
	if res.Contents[1].Size != 1000 || res.Contents[1].ETag != `"m1"` || res.Contents[1].LastModified != "1970-01-01T00:00:01.000Z" {
		t.Errorf("entry %+v", res.Contents[1])
	}

	// rclone's call: v1 with a delimiter on a "directory".
	res = listPage(t, f.gw, "/bkt?delimiter=%2F&max-keys=1000&prefix=dir%2F")
	if len(res.Contents) != 1 || res.Contents[0].Key != "dir/a b+c.txt" || res.Marker == nil {
		t.Errorf("v1 listing %+v", res)
	}
	// encoding-type=url, as the AWS CLI asks.
	res = listPage(t, f.gw, "/bkt?list-type=2&prefix=dir/&encoding-type=url")
	if len(res.Contents) != 1 || res.Contents[0].Key != "dir/a+b%2Bc.txt" || res.EncodingType != "url" {
		t.Errorf("url-encoded listing %+v", res.Contents)
	}
	if k, _ := url.QueryUnescape(res.Contents[0].Key); k != "dir/a b+c.txt" {
		t.Errorf("encoded key decodes to %q", k)
	}

	for target, code := range map[string]string{
		"/bkt?list-type=2&max-keys=-1":            "InvalidArgument",
		"/bkt?list-type=2&encoding-type=base64":   "InvalidArgument",
		"/bkt?list-type=2&continuation-token=!!!": "InvalidArgument",
		"/bkt?versioning":                         "NotImplemented",
		"/nobucket?list-type=2":                   "NoSuchBucket",
	} {
		w := f.do("GET", target)
		if w.Code < 400 || parseError(t, w.Body.Bytes()).Code != code {
			t.Errorf("GET %s: status %d body %s, want %s", target, w.Code, w.Body, code)
		}
	}
}

func TestBucketCalls(t *testing.T) {
	f := newFixture(t, nil)
	w := f.do("GET", "/bkt?location")
	if w.Code != 200 || !strings.Contains(w.Body.String(), "<LocationConstraint") {
		t.Fatalf("location: %d %s", w.Code, w.Body)
	}
	if w := f.do("HEAD", "/bkt"); w.Code != 200 {
		t.Fatalf("HEAD bucket: %d", w.Code)
	}
	if w := f.do("HEAD", "/nobucket"); w.Code != 404 {
		t.Fatalf("HEAD missing bucket: %d", w.Code)
	}
	if w := f.do("GET", "/nobucket?location"); w.Code != 404 || parseError(t, w.Body.Bytes()).Code != "NoSuchBucket" {
		t.Fatalf("location of a missing bucket: %d %s, want 404 NoSuchBucket", w.Code, w.Body)
	}
	if w := f.do("GET", "/"); w.Code != 200 || !strings.Contains(w.Body.String(), "<ListAllMyBucketsResult") {
		t.Fatalf("list buckets: %d %s", w.Code, w.Body)
	}
	// A backend without List: listing is 501, HEAD bucket still 200.
	gw, err := New(Config{Backend: backendFunc{}})
	if err != nil {
		t.Fatal(err)
	}
	f2 := &fixture{gw: gw}
	if w := f2.do("GET", "/bkt?list-type=2"); w.Code != 501 {
		t.Fatalf("list without Lister: %d", w.Code)
	}
	if w := f2.do("HEAD", "/bkt"); w.Code != 200 {
		t.Fatalf("HEAD bucket without Lister: %d", w.Code)
	}
	if w := f2.do("GET", "/bkt?location"); w.Code != 200 {
		t.Fatalf("location without Lister: %d", w.Code)
	}
}

// shuffledStore lists in random order, to check that paging does not rely
// on the origin's order.
type shuffledStore struct {
	*origintest.MemStore
	seed uint64
}

func (s shuffledStore) List(ctx context.Context, prefix string, fn func(origin.Info) error) error {
	var all []origin.Info
	if err := s.MemStore.List(ctx, prefix, func(i origin.Info) error { all = append(all, i); return nil }); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(s.seed, 1))
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for _, i := range all {
		if err := fn(i); err != nil {
			return err
		}
	}
	return nil
}

// refList is the brute-force reference: every key under prefix, collapsed
// at the delimiter, sorted, deduplicated.
func refList(keys []string, prefix, delim string) []string {
	var out []string
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if delim != "" {
			if i := strings.Index(k[len(prefix):], delim); i >= 0 {
				k = k[:len(prefix)+i+len(delim)]
			}
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestListPagingProperty pages through random key sets with random page
// sizes, prefixes and delimiters, v1 and v2, and compares the union of the
// pages with the reference.
func TestListPagingProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	alphabet := []string{"a", "b", "/", "-", "ab", "z/", "é"}
	for trial := range 60 {
		m := origintest.NewMemStore()
		var keys []string
		for range 1 + r.IntN(80) {
			var sb strings.Builder
			for range 1 + r.IntN(6) {
				sb.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			keys = append(keys, sb.String())
			m.Put("s3://bkt/"+sb.String(), []byte("x"))
		}
		gw, err := New(Config{Backend: StoreBackend{Store: shuffledStore{m, uint64(trial)}}})
		if err != nil {
			t.Fatal(err)
		}
		prefix := []string{"", "a", "b/", "ab"}[r.IntN(4)]
		delim := []string{"", "/", "b"}[r.IntN(3)]
		maxKeys := 1 + r.IntN(7)
		v2 := r.IntN(2) == 0
		want := refList(keys, prefix, delim)
		var got []string
		token, marker := "", ""
		for page := 0; ; page++ {
			if page > len(want)+2 {
				t.Fatalf("trial %d: paging does not end", trial)
			}
			q := url.Values{"prefix": {prefix}, "delimiter": {delim}, "max-keys": {fmt.Sprint(maxKeys)}}
			if v2 {
				q.Set("list-type", "2")
				if token != "" {
					q.Set("continuation-token", token)
				}
			} else if marker != "" {
				q.Set("marker", marker)
			}
			res := listPage(t, gw, "/bkt?"+q.Encode())
			n := len(res.Contents) + len(res.CommonPrefixes)
			if n > maxKeys {
				t.Fatalf("trial %d: page of %d entries, max-keys %d", trial, n, maxKeys)
			}
			var pageNames []string
			for _, c := range res.Contents {
				pageNames = append(pageNames, c.Key)
			}
			for _, p := range res.CommonPrefixes {
				pageNames = append(pageNames, p.Prefix)
			}
			slices.Sort(pageNames)
			got = append(got, pageNames...)
			if !res.IsTruncated {
				break
			}
			token, marker = res.NextContinuationToken, res.NextMarker
			if (v2 && token == "") || (!v2 && marker == "") {
				t.Fatalf("trial %d: truncated page without a next token", trial)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (prefix %q delim %q max %d v2 %v):\n got %q\nwant %q", trial, prefix, delim, maxKeys, v2, got, want)
		}
	}
}
