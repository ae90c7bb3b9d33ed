package membership

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestMemberlistLogLevels(t *testing.T) {
	var buf bytes.Buffer
	l := newMemberlistLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Printf("[DEBUG] memberlist: hidden")
	l.Printf("[INFO] memberlist: an info")
	l.Printf("[WARN] memberlist: a warning")
	l.Printf("[ERR] memberlist: an error")
	l.Printf("no prefix")
	out := buf.String()
	for _, want := range []string{`level=INFO msg="memberlist: an info"`, `level=WARN msg="memberlist: a warning"`,
		`level=ERROR msg="memberlist: an error"`, `level=INFO msg="no prefix"`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hidden") {
		t.Errorf("debug line logged at info level:\n%s", out)
	}
}
