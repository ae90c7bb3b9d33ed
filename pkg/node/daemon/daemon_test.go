package daemon

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/locuscache/locus/internal/flagenv"
)

// TestFlagsPerDesign: every flag DESIGN.md names exists, each with its
// LOCUS_* variable in --help.
func TestFlagsPerDesign(t *testing.T) {
	var out bytes.Buffer
	if code := Main([]string{"--help"}, func(string) (string, bool) { return "", false }, &out, io.Discard); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	help := out.String()
	for _, f := range []string{"node-id", "rack", "gossip-addr", "join", "grpc-addr", "http-addr", "cache-dir", "cache-size",
		"memory-size", "slots", "block-size", "page-size", "origin-s3-endpoint", "origin-s3-region", "origin-s3-path-style",
		"origin-file-root", "gossip-key-file", "tls-cert", "tls-key", "tls-ca"} {
		if !strings.Contains(help, "--"+f+" ") && !strings.Contains(help, "--"+f+"   ") {
			t.Errorf("--help lacks --%s", f)
		}
		if !strings.Contains(help, flagenv.EnvName(f)) {
			t.Errorf("--help lacks %s", flagenv.EnvName(f))
		}
	}
	for _, d := range []string{"127.0.0.1:7946", "127.0.0.1:7070", "127.0.0.1:7080"} {
		if !strings.Contains(help, d) {
			t.Errorf("--help lacks the default %s", d)
		}
	}
}

// TestBadConfigExits: bad flags and flag values the configuration refuses
// exit 2; a configuration the system cannot run (a missing file, an
// address that cannot be bound) exits 1; each with one line on stderr.
func TestBadConfigExits(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		code int
		want string
	}{
		{"unknown flag", []string{"--no-such-flag"}, nil, 2, "no-such-flag"},
		{"bad size", []string{"--cache-size=lots"}, nil, 2, "cache-size"},
		{"bad size in env", nil, map[string]string{"LOCUS_MEMORY_SIZE": "huge"}, 2, "LOCUS_MEMORY_SIZE"},
		{"positional", []string{"extra"}, nil, 2, "unexpected"},
		{"bad log level", []string{"--log-level=loud"}, nil, 2, "log-level"},
		{"cache dir without size", []string{"--cache-dir=" + dir, "--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0"}, nil, 2, "cache-size"},
		{"cert without key", []string{"--tls-cert=/x.pem", "--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0"}, nil, 2, "tls-key"},
		{"missing cert file", []string{"--tls-cert=/nope.pem", "--tls-key=/nope-key.pem", "--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0"}, nil, 1, "nope.pem"},
		{"page size not dividing block", []string{"--page-size=3MiB", "--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0"}, nil, 2, "does not divide"},
		{"bad gossip tuning", []string{"--gossip-tuning=wan"}, nil, 2, "gossip-tuning"},
		{"bad cache verify", []string{"--cache-verify=sometimes"}, nil, 2, "cache-verify"},
		{"missing file root", []string{"--origin-file-root=/no/such/dir"}, nil, 1, "origin-file-root"},
		{"bad file version", []string{"--origin-file-version=inode"}, nil, 2, "origin-file-version"},
		{"negative s3 timeout", []string{"--origin-s3-timeout=-1s"}, nil, 2, "origin-s3-timeout"},
		{"s3 endpoint without scheme", []string{"--origin-s3-endpoint=127.0.0.1:9000"}, nil, 2, "origin-s3-endpoint"},
		{"s3 endpoint without scheme in env", nil, map[string]string{"LOCUS_ORIGIN_S3_ENDPOINT": "minio:9000"}, 2, "origin-s3-endpoint"},
		{"missing key file", []string{"--gossip-key-file=/no/key", "--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0"}, nil, 1, "key"},
		{"bad gateway bucket", []string{"--gateway-bucket=lake"}, nil, 2, "gateway-bucket"},
		{"gateway bucket named twice", []string{"--gateway-bucket=lake=s3://bkt/a/,lake=s3://bkt/b/"}, nil, 2, "gateway-bucket"},
		{"malformed address", []string{"--grpc-addr=notanaddr", "--http-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0"}, nil, 2, "missing port"},
		{"malformed gossip address", []string{"--gossip-addr=notanaddr", "--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0"}, nil, 2, "notanaddr"},
		{"unbindable address", []string{"--grpc-addr=192.0.2.1:1", "--http-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0"}, nil, 1, "gRPC listener"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			code := Main(tc.args, lookup, io.Discard, &out)
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			last := lines[len(lines)-1]
			if code != tc.code || !strings.Contains(last, tc.want) || !strings.HasPrefix(last, "cachenode: ") {
				t.Fatalf("exit %d, last line %q; want exit %d and a line about %q\n%s", code, last, tc.code, tc.want, out.String())
			}
			if n := len(lines) - countPrefix(lines, "time="); tc.code == 2 && n != 1 {
				t.Fatalf("bad flag printed %d lines besides log records, want one:\n%s", n, out.String())
			}
		})
	}
}

// countPrefix counts the lines that start with p.
func countPrefix(lines []string, p string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, p) {
			n++
		}
	}
	return n
}
