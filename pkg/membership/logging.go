package membership

import (
	"bytes"
	"context"
	"log"
	"log/slog"
)

// newMemberlistLogger adapts memberlist's *log.Logger output to slog:
// memberlist prefixes its lines with "[DEBUG]", "[INFO]", "[WARN]" or
// "[ERR]", which become the record's level.
func newMemberlistLogger(l *slog.Logger) *log.Logger {
	return log.New(slogWriter{l}, "", 0)
}

type slogWriter struct{ l *slog.Logger }

var levelPrefixes = []struct {
	prefix []byte
	level  slog.Level
}{
	{[]byte("[DEBUG]"), slog.LevelDebug},
	{[]byte("[INFO]"), slog.LevelInfo},
	{[]byte("[WARN]"), slog.LevelWarn},
	{[]byte("[ERR]"), slog.LevelError},
	{[]byte("[ERROR]"), slog.LevelError},
}

// Write logs one memberlist line. It never fails.
func (w slogWriter) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	level := slog.LevelInfo
	for _, lp := range levelPrefixes {
		if bytes.HasPrefix(line, lp.prefix) {
			level = lp.level
			line = bytes.TrimSpace(line[len(lp.prefix):])
			break
		}
	}
	ctx := context.Background()
	if w.l.Enabled(ctx, level) {
		w.l.Log(ctx, level, string(line))
	}
	return len(p), nil
}
