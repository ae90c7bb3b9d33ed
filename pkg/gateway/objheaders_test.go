package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
)

// objectHeaders are the standard headers S3 keeps with an object and
// sends on GetObject and HeadObject, with a value for each and the
// origin.Info field that carries it.
var objectHeaders = []struct {
	name, value string
	set         func(*origin.Info, string)
}{
	{"Content-Encoding", "gzip", func(i *origin.Info, v string) { i.ContentEncoding = v }},
	{"Content-Disposition", `attachment; filename="report 1.csv"`, func(i *origin.Info, v string) { i.ContentDisposition = v }},
	{"Cache-Control", "public, max-age=3600", func(i *origin.Info, v string) { i.CacheControl = v }},
	{"Content-Language", "de-DE", func(i *origin.Info, v string) { i.ContentLanguage = v }},
	{"Expires", "Wed, 02 Jan 2030 03:04:05 GMT", func(i *origin.Info, v string) { i.Expires = v }},
}

// TestObjectHeaders: each standard header the origin keeps with an object
// is passed through on GET, HEAD and ranged GET and HEAD; a header the
// object does not have is absent; a 304 carries the Cache-Control and
// Expires a 200 would (RFC 9110 15.4.5) but no Content-Encoding,
// -Disposition or -Language; a 412 (an S3 error document) carries none.
// Was: none of them was ever sent (a gzip-encoded object came without
// Content-Encoding: wrong bytes to the client).
func TestObjectHeaders(t *testing.T) {
	data := testData(100, 3)
	const etag = `"v1"`
	mod := time.Unix(1700000000, 0)
	requests := []struct {
		name   string
		method string
		hdr    []string
		status int
	}{
		{"GET", "GET", nil, 200},
		{"HEAD", "HEAD", nil, 200},
		{"GET range", "GET", []string{"Range", "bytes=10-19"}, 206},
		{"HEAD range", "HEAD", []string{"Range", "bytes=10-19"}, 206},
		{"GET partNumber", "GET", nil, 206}, // target gets ?partNumber=1 below
		{"GET 304", "GET", []string{"If-None-Match", etag}, 304},
		{"HEAD 304", "HEAD", []string{"If-Modified-Since", mod.Add(time.Hour).UTC().Format(http.TimeFormat)}, 304},
		{"GET 412", "GET", []string{"If-Match", `"other"`}, 412},
		{"HEAD 412", "HEAD", []string{"If-Unmodified-Since", mod.Add(-time.Hour).UTC().Format(http.TimeFormat)}, 412},
	}
	// One object per header, carrying only that header, and one without any.
	objects := append([]string{""}, func() []string {
		var names []string
		for _, h := range objectHeaders {
			names = append(names, h.name)
		}
		return names
	}()...)
	for _, has := range objects {
		info := origin.Info{Size: int64(len(data)), Version: etag, ModTime: mod}
		for _, h := range objectHeaders {
			if h.name == has {
				h.set(&info, h.value)
			}
		}
		be := backendFunc{
			stat: func(string) (origin.Info, error) { return info, nil },
			read: func(req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
				return readpath.Summary{}, emit(data[req.Offset:req.End()])
			},
		}
		gw, err := New(Config{Backend: be})
		if err != nil {
			t.Fatal(err)
		}
		obj := has
		if obj == "" {
			obj = "none"
		}
		for _, rq := range requests {
			t.Run(obj+"/"+rq.name, func(t *testing.T) {
				target := "/bkt/k"
				if rq.name == "GET partNumber" {
					target += "?partNumber=1"
				}
				r := httptest.NewRequest(rq.method, target, nil)
				for i := 0; i+1 < len(rq.hdr); i += 2 {
					r.Header.Set(rq.hdr[i], rq.hdr[i+1])
				}
				w := httptest.NewRecorder()
				gw.ServeHTTP(w, r)
				if w.Code != rq.status {
					t.Fatalf("status %d, want %d", w.Code, rq.status)
				}
				for _, h := range objectHeaders {
					want := ""
					switch {
					case h.name != has:
					case rq.status == 412:
					case rq.status == 304 && h.name != "Cache-Control" && h.name != "Expires":
					default:
						want = h.value
					}
					if got := w.Header().Values(h.name); want == "" && len(got) != 0 || want != "" && (len(got) != 1 || got[0] != want) {
						t.Errorf("%s: got %q, want %q", h.name, got, want)
					}
				}
			})
		}
	}
}

// TestObjectHeadersOverride: a response-* query parameter wins over the
// header the origin keeps, as on S3 (a presigned download link sets
// response-content-disposition on an object stored with its own).
func TestObjectHeadersOverride(t *testing.T) {
	info := origin.Info{Size: 3, Version: `"v"`, ContentDisposition: "inline", CacheControl: "max-age=60", ContentEncoding: "gzip"}
	be := backendFunc{
		stat: func(string) (origin.Info, error) { return info, nil },
		read: func(req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
			return readpath.Summary{}, emit([]byte("abc")[req.Offset:req.End()])
		},
	}
	gw, err := New(Config{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	gw.ServeHTTP(w, httptest.NewRequest("GET", "/bkt/k?response-content-disposition=attachment&response-cache-control=no-store", nil))
	for h, want := range map[string]string{"Content-Disposition": "attachment", "Cache-Control": "no-store", "Content-Encoding": "gzip"} {
		if got := w.Header().Values(h); len(got) != 1 || got[0] != want {
			t.Errorf("%s: got %q, want %q", h, got, want)
		}
	}
}

// TestRetryDropsOldVersionContentHeaders: as TestRetryDropsOldVersionHeaders
// for the standard headers: the object is rewritten without them between
// the Stat and the first byte; the gateway starts over, and the new
// version's response carries none of the old version's.
func TestRetryDropsOldVersionContentHeaders(t *testing.T) {
	newData := []byte("plain new bytes")
	var stats atomic.Int32
	be := backendFunc{
		stat: func(string) (origin.Info, error) {
			if stats.Add(1) == 1 {
				info := origin.Info{Size: 20, Version: `"v1"`, ModTime: time.Unix(1700000000, 0)}
				for _, h := range objectHeaders {
					h.set(&info, h.value)
				}
				return info, nil
			}
			return origin.Info{Size: int64(len(newData)), Version: `"v2"`, ModTime: time.Unix(1700000100, 0)}, nil
		},
		read: func(req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
			if req.ExpectedVersion != `"v2"` {
				return readpath.Summary{}, fmt.Errorf("test: %w", origin.ErrVersionChanged)
			}
			return readpath.Summary{}, emit(newData[req.Offset:req.End()])
		},
	}
	gw, err := New(Config{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	gw.ServeHTTP(w, httptest.NewRequest("GET", "/bkt/k", nil))
	if w.Code != 200 || w.Body.String() != string(newData) || w.Header().Get("ETag") != `"v2"` {
		t.Fatalf("status %d body %q ETag %q, want 200 with version v2", w.Code, w.Body, w.Header().Get("ETag"))
	}
	if n := stats.Load(); n != 2 {
		t.Fatalf("%d Stats, want 2 (the retry did not happen)", n)
	}
	for _, h := range objectHeaders {
		if got := w.Header().Values(h.name); len(got) != 0 {
			t.Errorf("response of version v2 carries %s %q of version v1", h.name, got)
		}
	}
}

// refusePrefixes is a Backend that refuses URIs ending in "/" as a cache
// node does (origin.ErrInvalidURI: a listing prefix), and serves the rest
// from its StoreBackend.
type refusePrefixes struct{ StoreBackend }

func (b refusePrefixes) Stat(ctx context.Context, uri string) (origin.Info, error) {
	if strings.HasSuffix(uri, "/") {
		return origin.Info{}, fmt.Errorf("%w: %q names a prefix", origin.ErrInvalidURI, uri)
	}
	return b.StoreBackend.Stat(ctx, uri)
}

func (b refusePrefixes) Read(ctx context.Context, req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
	if strings.HasSuffix(req.URI, "/") {
		return readpath.Summary{}, fmt.Errorf("%w: %q names a prefix", origin.ErrInvalidURI, req.URI)
	}
	return b.StoreBackend.Read(ctx, req, emit)
}

// TestDirectoryMarker: GET and HEAD of a key ending in "/" that the origin
// holds as an object (a directory marker) answer 200 with its bytes, as S3
// does, whether the Backend serves it (a StoreBackend, the default) or
// refuses it as a node does and Config.DirectoryMarkers serves it; a
// prefix that is no object is 404 NoSuchKey either way, and so is a marker
// behind a Backend that refuses it with no DirectoryMarkers set.
func TestDirectoryMarker(t *testing.T) {
	m := origintest.NewMemStore()
	m.Put("s3://bkt/dir/", nil)
	m.Put("s3://bkt/dir/a.bin", []byte("a"))
	m.Put("s3://bkt/full/", []byte("marker with bytes"))
	m.Put("s3://bkt/implicit/a.bin", []byte("a"))
	store := StoreBackend{Store: m}
	for _, tc := range []struct {
		name    string
		cfg     Config
		markers bool // the markers are served
	}{
		{"StoreBackend", Config{Backend: store}, true},
		{"node with DirectoryMarkers", Config{Backend: refusePrefixes{store}, DirectoryMarkers: store}, true},
		{"node alone", Config{Backend: refusePrefixes{store}}, false},
	} {
		gw, err := New(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, rq := range []struct {
			method, target string
			marker         bool
			body           string
		}{
			{"GET", "/bkt/dir/", true, ""},
			{"HEAD", "/bkt/dir/", true, ""},
			{"GET", "/bkt/full/", true, "marker with bytes"},
			{"HEAD", "/bkt/full/", true, ""},
			{"GET", "/bkt/implicit/", false, ""},
			{"HEAD", "/bkt/implicit/", false, ""},
			{"GET", "/bkt/nothing/", false, ""},
			{"GET", "/bkt/dir/a.bin", true, "a"}, // not a marker: always served
		} {
			w := httptest.NewRecorder()
			gw.ServeHTTP(w, httptest.NewRequest(rq.method, rq.target, nil))
			served := rq.marker && (tc.markers || !strings.HasSuffix(rq.target, "/"))
			switch {
			case served && (w.Code != 200 || w.Body.String() != rq.body):
				t.Errorf("%s: %s %s: %d %q, want 200 %q", tc.name, rq.method, rq.target, w.Code, w.Body, rq.body)
			case !served && w.Code != 404:
				t.Errorf("%s: %s %s: %d, want 404", tc.name, rq.method, rq.target, w.Code)
			case !served && rq.method == "GET" && parseError(t, w.Body.Bytes()).Code != "NoSuchKey":
				t.Errorf("%s: %s %s: %s, want NoSuchKey", tc.name, rq.method, rq.target, w.Body)
			}
		}
	}
}
