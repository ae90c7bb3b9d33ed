package origintest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/locuscache/locus/internal/testproc"
	"github.com/locuscache/locus/pkg/origin"
)

// RequireEnv names the environment variable that turns a missing versitygw
// binary from a skip into a failure. LOCUS_REQUIRE_TOOLS=1 (the project-wide
// switch CI also sets) does the same.
const RequireEnv = "LOCUS_REQUIRE_VERSITYGW"

// InstallHint says how to get the binary.
const InstallHint = "go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// VersityGW is a running versitygw server with one bucket.
type VersityGW struct {
	Endpoint  string // http://127.0.0.1:port
	Region    string
	AccessKey string
	SecretKey string
	Bucket    string // created at start
	Root      string // the posix backend's directory: Root/Bucket/key

	client *s3.Client
	proc   *testproc.Proc
}

// FindVersityGW returns the path of the versitygw binary: PATH first, then
// $(go env GOPATH)/bin (GOPATH from the environment, `go env`, or ~/go).
func FindVersityGW() (string, error) {
	p, err := testproc.LookPath("versitygw")
	if err != nil {
		return "", fmt.Errorf("%v; install it with: %s", err, InstallHint)
	}
	return p, nil
}

// StartVersityGW starts versitygw with a temporary posix root and static
// credentials on a free 127.0.0.1 port, waits until it answers, creates a
// bucket, and stops the server when the test ends. Without the binary it
// skips the test (or fails it when LOCUS_REQUIRE_VERSITYGW=1).
func StartVersityGW(t testing.TB) *VersityGW {
	t.Helper()
	bin, err := FindVersityGW()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" || os.Getenv("LOCUS_REQUIRE_TOOLS") == "1" {
			t.Fatalf("%v (%s=1 makes this fatal)", err, RequireEnv)
		}
		t.Skipf("skipping S3 integration test: %v (set %s=1 to make this fatal)", err, RequireEnv)
	}
	var lastErr error
	for try := 0; try < 3; try++ { // a free port can be taken before the server binds it
		g, err := startOnce(t, bin)
		if err == nil {
			return g
		}
		lastErr = err
	}
	t.Fatalf("cannot start versitygw: %v", lastErr)
	return nil
}

func startOnce(t testing.TB, bin string) (*VersityGW, error) {
	port, err := testproc.FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	g := &VersityGW{
		Endpoint:  fmt.Sprintf("http://127.0.0.1:%d", port),
		Region:    "us-east-1",
		AccessKey: "locustestaccess",
		SecretKey: "locustestsecret0123456789",
		Bucket:    "locus-test",
		Root:      t.TempDir(),
	}
	cmd := exec.Command(bin,
		"--port", fmt.Sprintf("127.0.0.1:%d", port),
		"--access", g.AccessKey, "--secret", g.SecretKey,
		"--region", g.Region, "--quiet",
		"posix", g.Root)
	g.proc, err = testproc.Launch(cmd, testproc.Options{Name: "versitygw", LogLimit: 1 << 20})
	if err != nil {
		return nil, err
	}
	// Any HTTP answer means the server is up.
	if err := g.proc.WaitReady(testproc.HTTPReady(&http.Client{Timeout: time.Second}, g.Endpoint+"/", 0), 15*time.Second, 25*time.Millisecond); err != nil {
		g.Stop()
		return nil, fmt.Errorf("%w; server output:\n%s", err, g.Logs())
	}
	t.Cleanup(func() {
		g.Stop()
		if t.Failed() {
			t.Logf("versitygw output:\n%s", g.Logs())
		}
	})
	store, err := origin.NewS3Store(context.Background(), g.Config())
	if err != nil {
		return nil, err
	}
	g.client = store.Client()
	if err := g.createBucket(g.Bucket); err != nil {
		return nil, err
	}
	return g, nil
}

// Stop terminates the server (SIGTERM, then SIGKILL after 5s). Idempotent.
func (g *VersityGW) Stop() { _ = g.proc.Terminate(5 * time.Second) }

// Logs returns what the server printed so far.
func (g *VersityGW) Logs() string { return g.proc.Logs() }

// Config returns an S3Config for this server: endpoint, path style, static
// credentials, and short timeouts suited to loopback tests.
func (g *VersityGW) Config() origin.S3Config {
	return origin.S3Config{
		Endpoint:        g.Endpoint,
		Region:          g.Region,
		PathStyle:       true,
		AccessKeyID:     g.AccessKey,
		SecretAccessKey: g.SecretKey,
		MaxAttempts:     3,
		BaseBackoff:     10 * time.Millisecond,
		MaxBackoff:      100 * time.Millisecond,
		Timeout:         10 * time.Second,
	}
}

// Store returns a new S3Store for this server.
func (g *VersityGW) Store(t testing.TB) *origin.S3Store {
	t.Helper()
	s, err := origin.NewS3Store(context.Background(), g.Config())
	if err != nil {
		t.Fatalf("NewS3Store: %v", err)
	}
	return s
}

// URI returns s3://<bucket>/<key>.
func (g *VersityGW) URI(key string) string { return "s3://" + g.Bucket + "/" + key }

// Client returns an SDK client for this server (for setup the Store does
// not offer, such as writes).
func (g *VersityGW) Client() *s3.Client { return g.client }

func (g *VersityGW) createBucket(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := g.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	if err != nil {
		return fmt.Errorf("create bucket %q: %w", name, err)
	}
	return nil
}

// CreateBucket creates another bucket.
func (g *VersityGW) CreateBucket(t testing.TB, name string) {
	t.Helper()
	if err := g.createBucket(name); err != nil {
		t.Fatal(err)
	}
}

// Put writes an object into the default bucket and returns its ETag (as
// the server sent it, quotes included).
func (g *VersityGW) Put(t testing.TB, key string, data []byte) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := g.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(g.Bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return aws.ToString(out.ETag)
}

// Delete removes an object from the default bucket.
func (g *VersityGW) Delete(t testing.TB, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := g.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(g.Bucket), Key: aws.String(key)}); err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
}
