// Package flagenv lets every daemon flag also be set from the environment:
// the flag --cache-dir reads LOCUS_CACHE_DIR when it is not given on the
// command line. Command-line flags always win over the environment.
package flagenv
