package gateway

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
)

// FuzzHandler sends arbitrary paths, queries and headers to the gateway
// over an in-memory store and checks what any answer must satisfy: no
// panic; a known status; a 200 carries the whole object, a 206 exactly the
// bytes its Content-Range names; an error to a GET is an S3 XML document.
func FuzzHandler(f *testing.F) {
	seeds := []struct{ method, target, rng, ifMatch, ifNone, ims string }{
		{"GET", "/bkt/obj", "bytes=0-9", "", "", ""},
		{"HEAD", "/bkt/obj", "bytes=-5", `"m1"`, "", ""},
		{"GET", "/bkt/obj?partNumber=1", "", "", `"m1"`, ""},
		{"GET", "/bkt?list-type=2&prefix=o&max-keys=1", "", "", "", ""},
		{"GET", "/bkt/empty", "bytes=0-", "", "", "Thu, 01 Jan 1970 00:00:01 GMT"},
		{"PUT", "/bkt/obj", "", "", "", ""},
		{"GET", "/bkt/obj", "bytes=5-1", "*", "*", "junk"},
	}
	for _, s := range seeds {
		f.Add(s.method, s.target, s.rng, s.ifMatch, s.ifNone, s.ims)
	}
	fx := newFixture(f, nil)
	f.Fuzz(func(t *testing.T, method, target, rng, ifMatch, ifNone, ims string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || method == "" || !validMethod(method) {
			return
		}
		r := httptest.NewRequest("GET", "http://x/", nil)
		r.Method, r.URL, r.RequestURI = method, u, target
		for k, v := range map[string]string{"Range": rng, "If-Match": ifMatch, "If-None-Match": ifNone, "If-Modified-Since": ims} {
			if v != "" {
				r.Header.Set(k, v)
			}
		}
		w := httptest.NewRecorder()
		fx.gw.ServeHTTP(w, r)
		body := w.Body.Bytes()
		switch w.Code {
		case 200, 206:
			if method == "HEAD" || u.Query().Has("partNumber") && w.Code == 206 {
				return
			}
			obj, ok := objectFor(fx, u.Path)
			if !ok {
				return // a listing or bucket call
			}
			if w.Code == 200 && !bytes.Equal(body, obj) {
				t.Fatalf("%s %s (Range %q): 200 with %d bytes, want the whole %d-byte object", method, target, rng, len(body), len(obj))
			}
			if w.Code == 206 {
				var start, end, size int64
				if _, err := fmt.Sscanf(w.Header().Get("Content-Range"), "bytes %d-%d/%d", &start, &end, &size); err != nil {
					t.Fatalf("206 with Content-Range %q", w.Header().Get("Content-Range"))
				}
				if size != int64(len(obj)) || start < 0 || end >= size || end < start || !bytes.Equal(body, obj[start:end+1]) {
					t.Fatalf("%s %s (Range %q): 206 %q with %d bytes, not those bytes", method, target, rng, w.Header().Get("Content-Range"), len(body))
				}
			}
			if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(len(body)) {
				t.Fatalf("Content-Length %s for %d bytes", cl, len(body))
			}
		case 304, 400, 403, 404, 405, 412, 416, 501:
			if method == "GET" && w.Code != 304 {
				parseError(t, body)
			}
		default:
			t.Fatalf("%s %s: unexpected status %d: %s", method, target, w.Code, body)
		}
	})
}

func validMethod(m string) bool {
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// objectFor returns the fixture's bytes for a GET path, or ok=false.
func objectFor(fx *fixture, path string) ([]byte, bool) {
	switch path {
	case "/bkt/obj":
		return fx.data, true
	case "/bkt/empty":
		return []byte{}, true
	case "/bkt/dir/a b+c.txt":
		return []byte("spaces"), true
	}
	return nil, false
}
