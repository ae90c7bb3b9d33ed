package membership

import "time"

// ConflictRecheck exposes conflictRecheck to the external tests.
func ConflictRecheck() time.Duration { return conflictRecheck }
