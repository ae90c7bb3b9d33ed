package gatewaytest

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that records Skipf and Fatalf instead of
// stopping the goroutine.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestLookMissingTool(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(RequireEnv, "")
	r := &recorder{TB: t}
	if p := Look(r, "aws"); p != "" || r.skipped == "" || r.failed != "" {
		t.Fatalf("without %s: path %q, skipped %q, failed %q; want a skip", RequireEnv, p, r.skipped, r.failed)
	}
	t.Setenv(RequireEnv, "1")
	r = &recorder{TB: t}
	if p := Look(r, "rclone"); p != "" || r.failed == "" {
		t.Fatalf("with %s=1: path %q, failed %q; want a failure", RequireEnv, p, r.failed)
	}
}

func TestBaseEnvDropsAWSAndRclone(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "/nope")
	t.Setenv("AWS_PROFILE", "prod")
	t.Setenv("RCLONE_CONFIG_PROD_TYPE", "s3")
	for _, kv := range baseEnv("AWS_ACCESS_KEY_ID=x") {
		switch kv {
		case "AWS_CA_BUNDLE=/nope", "AWS_PROFILE=prod", "RCLONE_CONFIG_PROD_TYPE=s3":
			t.Errorf("baseEnv kept %s", kv)
		}
	}
}
