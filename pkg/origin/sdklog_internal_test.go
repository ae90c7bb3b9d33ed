package origin

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aws/smithy-go/logging"
)

// The AWS SDK's log lines go through the daemon's slog logger (so a JSON
// log stays JSON), warnings as warnings.
func TestSDKLogger(t *testing.T) {
	var buf bytes.Buffer
	l := sdkLogger(slog.New(slog.NewJSONHandler(&buf, nil)))
	l.Logf(logging.Warn, "falling back to %s", "IMDSv1")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON line: %q (%v)", buf.String(), err)
	}
	if rec["level"] != "WARN" || rec["msg"] != "falling back to IMDSv1" || rec["component"] != "aws-sdk" {
		t.Fatalf("record %v", rec)
	}
}
