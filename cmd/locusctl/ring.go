package main

import "io"

// runRing is implemented by the ring issue (locusctl ring simulate).
func runRing(args []string, stdout, stderr io.Writer) error {
	return usageErrorf("ring: not implemented yet")
}
