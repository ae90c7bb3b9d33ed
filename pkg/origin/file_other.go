//go:build !unix

package origin

import "os"

// openFlags: see file_unix.go.
const openFlags = os.O_RDONLY
