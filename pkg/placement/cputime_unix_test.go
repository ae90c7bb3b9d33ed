//go:build unix

package placement_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) this process has used so far.
// Benchmarks report it next to wall time: the machine is shared, and CPU
// time per op is far steadier than wall time under load.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
