package gateway

// Edge cases from an adversarial review of GET/HEAD on a file:// bucket:
// traversal spelled every way a client can (encoded dots and slashes, NUL,
// a symbolic link out of the root) never serves a byte outside the root,
// and keys with unicode, '+', spaces and an encoded '%' name exactly the
// file they spell.

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
)

func TestFileBucketTraversalAndKeys(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	secret := []byte("secret bytes outside the root")
	if err := writeFile(filepath.Join(base, "secret"), secret); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"ünï/cødé.bin": testData(3000, 11),
		"a+b c.bin":    testData(100, 12),
		"pct%2Fname":   []byte("a file whose name holds %2F"),
		"pct/name":     []byte("the file pct/name"),
		"q?x#y.bin":    []byte("query and fragment characters"),
	}
	for k, d := range files {
		if err := writeFile(filepath.Join(root, k), d); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "secret"), filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	fs, err := origin.NewFileStore(origin.FileConfig{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	gw, err := New(Config{Backend: StoreBackend{Store: fs}, Buckets: map[string]string{"local": "file://" + root + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	get := func(target string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", target, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		gw.ServeHTTP(w, r)
		return w
	}
	for _, target := range []string{
		"/local/%2e%2e/secret", "/local/%2E%2E%2Fsecret", "/local/..%2fsecret",
		"/local/x/%2e%2e/%2e%2e/secret", "/local/out", "/local/secret%00",
		"/local/./../secret", "/local/%2F..%2Fsecret",
	} {
		w := get(target)
		if w.Code == 200 || w.Code == 206 || bytes.Contains(w.Body.Bytes(), secret) {
			t.Errorf("GET %s: status %d, body %q: served from outside the root", target, w.Code, w.Body.Bytes())
		}
		if w.Code != 403 && w.Code != 400 && w.Code != 404 {
			t.Errorf("GET %s: status %d, want 403, 400 or 404", target, w.Code)
		}
	}
	for target, key := range map[string]string{
		"/local/%C3%BCn%C3%AF/c%C3%B8d%C3%A9.bin": "ünï/cødé.bin",
		"/local/a+b%20c.bin":                      "a+b c.bin",
		"/local/pct%252Fname":                     "pct%2Fname",
		"/local/pct%2Fname":                       "pct/name", // an encoded slash is a slash, as in S3
		"/local/q%3Fx%23y.bin":                    "q?x#y.bin",
	} {
		w := get(target)
		if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), files[key]) {
			t.Errorf("GET %s: status %d, %d bytes; want 200 and the file %q", target, w.Code, w.Body.Len(), key)
		}
		d := files[key]
		w = get(target, "Range", "bytes=-3")
		if w.Code != 206 || !bytes.Equal(w.Body.Bytes(), d[len(d)-3:]) {
			t.Errorf("GET %s bytes=-3: status %d, body %q", target, w.Code, w.Body.Bytes())
		}
	}
}
