// Command mkimage writes the Locus container image (both daemons) as a
// docker-archive tarball, and optionally an OCI layout, from binaries
// already built for linux. scripts/build-image.sh builds the binaries and
// runs it; see internal/ociimage for what the image holds and why it is
// built without a container engine.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/locuscache/locus/internal/flagenv"
	"github.com/locuscache/locus/internal/ociimage"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var (
		l       ociimage.Locus
		out     = fl.String("out", "locus-image.tar", "docker-archive `file` to write")
		ociDir  = fl.String("oci-layout", "", "also write an OCI image layout into this `dir`")
		tagRef  = fl.String("tag", "", "image `ref` with a tag, e.g. ghcr.io/locuscache/locus:0.1.0 (required)")
		created = fl.Int64("created", 0, "file and image times, Unix `seconds` (the commit time makes builds reproducible)")
	)
	fl.StringVar(&l.Cachenode, "cachenode", "", "cachenode binary built for linux/<arch> (required)")
	fl.StringVar(&l.Scheduler, "scheduler", "", "scheduler binary built for linux/<arch> (required)")
	fl.StringVar(&l.Arch, "arch", "amd64", "image architecture: amd64 or arm64")
	fl.StringVar(&l.CABundle, "ca-bundle", ociimage.CABundlePath, "host CA certificates `file` to copy into the image")
	fl.StringVar(&l.Version, "version", "", "org.opencontainers.image.version label (default: the tag)")
	fl.StringVar(&l.Revision, "revision", "", "org.opencontainers.image.revision label (the commit)")
	fl.StringVar(&l.Source, "source", "https://github.com/locuscache/locus", "org.opencontainers.image.source label")
	fl.Usage = func() {
		fmt.Fprintf(fl.Output(), "Usage: mkimage -cachenode FILE -scheduler FILE -tag REF [flags]\n\n"+
			"Writes the Locus image (both daemons, static, user 65532) as a docker-archive\n"+
			"tarball. Normally run by scripts/build-image.sh.\n\nFlags:\n")
		fl.PrintDefaults()
	}
	// As the daemons: -help prints the usage on stdout, a bad flag one
	// line on stderr.
	if err := flagenv.ParseHelp(fl, stdout, func() error { return fl.Parse(args) }); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "mkimage: %v (see -help)\n", err)
		return 2
	}
	if l.Cachenode == "" || l.Scheduler == "" || *tagRef == "" || fl.NArg() > 0 {
		fmt.Fprintln(stderr, "mkimage: -cachenode, -scheduler and -tag are required, and no arguments; see -help")
		return 2
	}
	tag, err := ociimage.ParseTag(*tagRef)
	if err != nil {
		fmt.Fprintln(stderr, "mkimage:", err)
		return 2
	}
	if l.Version == "" {
		l.Version = tag.TagStr()
	}
	l.Created = time.Unix(*created, 0)
	digest, err := ociimage.WriteLocus(l, tag, *out, *ociDir, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "mkimage:", err)
		return 1
	}
	size := "?"
	if st, err := os.Stat(*out); err == nil {
		size = strconv.FormatInt(st.Size(), 10)
	}
	fmt.Fprintf(stdout, "image %s\ndigest %s\ntarball %s (%s bytes)\n", tag, digest, *out, size)
	return 0
}
