//go:build unix

package origin

import (
	"os"
	"syscall"
)

// openFlags opens files without blocking: a FIFO under the root would
// otherwise block open(2) until a writer appears (hanging the read and its
// goroutine whatever the context says). O_NONBLOCK does nothing to regular
// files, and info rejects anything that is not one.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
