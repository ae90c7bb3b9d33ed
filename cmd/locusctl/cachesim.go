package main

import "io"

// runCacheSim is implemented by the cache issue (locusctl cache-sim).
func runCacheSim(args []string, stdout, stderr io.Writer) error {
	return usageErrorf("cache-sim: not implemented yet")
}
