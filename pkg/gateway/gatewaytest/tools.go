// Package gatewaytest runs real S3 command-line clients (the AWS CLI,
// s3cmd, rclone) against an S3 endpoint such as the Locus gateway, for
// integration tests.
//
// Each client runs in a hermetic environment: the caller's AWS_* and
// RCLONE_* variables are dropped (a stray AWS_CA_BUNDLE or profile would
// change what the tool does), dummy credentials are set (the gateway does
// not check signatures, but the tools refuse to run unsigned), configuration
// lives in a temporary directory, and every run is bounded by Timeout.
//
// A missing tool skips the test with a hint, unless LOCUS_REQUIRE_TOOLS=1
// (CI sets it), in which case the test fails: CI must never pass by
// skipping its client tests.
package gatewaytest

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RequireEnv names the environment variable that turns a missing tool from
// a skip into a failure.
const RequireEnv = "LOCUS_REQUIRE_TOOLS"

// Timeout bounds one tool run.
var Timeout = 90 * time.Second

// Install hints per tool (Debian packages; the AWS CLI v1 also comes from pip).
var hints = map[string]string{
	"aws":    "apt-get install awscli (or pip install awscli)",
	"s3cmd":  "apt-get install s3cmd",
	"rclone": "apt-get install rclone",
}

// Look returns the path of a tool, or skips the test (fails it when
// LOCUS_REQUIRE_TOOLS=1).
func Look(t testing.TB, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("%s not found in PATH (%s)", tool, hints[tool])
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s; %s=1 makes this fatal", msg, RequireEnv)
	}
	t.Skipf("skipping: %s; set %s=1 to make this fatal", msg, RequireEnv)
	return ""
}

// Result is the outcome of one tool run.
type Result struct {
	Stdout []byte
	Stderr string
	Err    error // nil when the tool exited 0
}

// baseEnv is the caller's environment without AWS_* and RCLONE_* and with
// dummy credentials.
func baseEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "RCLONE_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

func run(t testing.TB, env []string, name string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s did not finish within %s: %w", name, Timeout, ctx.Err())
	}
	t.Logf("%s %s: exit %v in %s", name, strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond))
	return Result{Stdout: stdout.Bytes(), Stderr: stderr.String(), Err: err}
}

// AWS runs the AWS CLI (v1 or v2) against endpoint (http://host:port) with
// path-style addressing.
type AWS struct {
	t        testing.TB
	bin      string
	endpoint string
	env      []string
}

// NewAWS prepares the AWS CLI for endpoint, or skips the test.
func NewAWS(t testing.TB, endpoint string) *AWS {
	t.Helper()
	bin := Look(t, "aws")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	if err := os.WriteFile(cfg, []byte("[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := baseEnv(
		"AWS_ACCESS_KEY_ID=locusdummy", "AWS_SECRET_ACCESS_KEY=locusdummysecret",
		"AWS_DEFAULT_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE="+cfg, "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "credentials"),
		"AWS_PAGER=", "AWS_MAX_ATTEMPTS=1", "AWS_RETRY_MODE=standard",
	)
	return &AWS{t: t, bin: bin, endpoint: endpoint, env: env}
}

// Run runs `aws <args> --endpoint-url <endpoint>`.
func (a *AWS) Run(args ...string) Result {
	a.t.Helper()
	return run(a.t, a.env, a.bin, append(args, "--endpoint-url", a.endpoint)...)
}

// Cp runs `aws s3 cp s3://bucket/key -` and returns stdout.
func (a *AWS) Cp(bucket, key string) Result {
	a.t.Helper()
	return a.Run("s3", "cp", "s3://"+bucket+"/"+key, "-")
}

// GetObject runs `aws s3api get-object --bucket --key [--range] <outfile>`
// and returns the file's bytes as Stdout.
func (a *AWS) GetObject(bucket, key, rng string) Result {
	a.t.Helper()
	out := filepath.Join(a.t.TempDir(), "out")
	args := []string{"s3api", "get-object", "--bucket", bucket, "--key", key}
	if rng != "" {
		args = append(args, "--range", rng)
	}
	res := a.Run(append(args, out)...)
	if res.Err == nil {
		b, err := os.ReadFile(out)
		if err != nil {
			res.Err = err
		}
		res.Stdout = b
	}
	return res
}

// S3cmd runs s3cmd against endpoint with a temporary config file.
type S3cmd struct {
	t   testing.TB
	bin string
	cfg string
	env []string
}

// NewS3cmd prepares s3cmd for endpoint (http://host:port), or skips the test.
func NewS3cmd(t testing.TB, endpoint string) *S3cmd {
	t.Helper()
	bin := Look(t, "s3cmd")
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "s3cfg")
	body := fmt.Sprintf(`[default]
access_key = locusdummy
secret_key = locusdummysecret
host_base = %[1]s
host_bucket = %[1]s
use_https = False
signature_v2 = False
bucket_location = us-east-1
check_ssl_certificate = False
progress_meter = False
`, u.Host)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return &S3cmd{t: t, bin: bin, cfg: cfg, env: baseEnv()}
}

// Get runs `s3cmd get s3://bucket/key <file>` and returns the file's bytes
// as Stdout.
func (s *S3cmd) Get(bucket, key string) Result {
	s.t.Helper()
	out := filepath.Join(s.t.TempDir(), "out")
	res := run(s.t, s.env, s.bin, "-c", s.cfg, "--no-check-md5", "get", "s3://"+bucket+"/"+key, out)
	if res.Err == nil {
		b, err := os.ReadFile(out)
		if err != nil {
			res.Err = err
		}
		res.Stdout = b
	}
	return res
}

// Rclone runs rclone with a remote named "locus" configured by environment.
type Rclone struct {
	t   testing.TB
	bin string
	env []string
}

// NewRclone prepares rclone for endpoint (http://host:port), or skips the test.
func NewRclone(t testing.TB, endpoint string) *Rclone {
	t.Helper()
	bin := Look(t, "rclone")
	dir := t.TempDir()
	env := baseEnv(
		"RCLONE_CONFIG="+filepath.Join(dir, "rclone.conf"),
		"RCLONE_CACHE_DIR="+filepath.Join(dir, "cache"),
		"RCLONE_CONFIG_LOCUS_TYPE=s3",
		"RCLONE_CONFIG_LOCUS_PROVIDER=Other",
		"RCLONE_CONFIG_LOCUS_ENDPOINT="+endpoint,
		"RCLONE_CONFIG_LOCUS_ACCESS_KEY_ID=locusdummy",
		"RCLONE_CONFIG_LOCUS_SECRET_ACCESS_KEY=locusdummysecret",
		"RCLONE_CONFIG_LOCUS_REGION=us-east-1",
		"RCLONE_CONFIG_LOCUS_FORCE_PATH_STYLE=true",
	)
	return &Rclone{t: t, bin: bin, env: env}
}

// Cat runs `rclone cat [--offset off --count count] locus:bucket/key`
// (count < 0: to the end).
func (r *Rclone) Cat(bucket, key string, off, count int64) Result {
	r.t.Helper()
	args := []string{"cat", "--retries", "1", "--low-level-retries", "1"}
	if off != 0 || count >= 0 {
		args = append(args, "--offset", fmt.Sprint(off), "--count", fmt.Sprint(count))
	}
	return run(r.t, r.env, r.bin, append(args, "locus:"+bucket+"/"+key)...)
}
