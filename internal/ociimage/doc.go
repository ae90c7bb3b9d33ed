// Package ociimage builds the container image the Helm chart (helm/locus)
// deploys, without a container engine.
//
// The chart runs both daemons from one image: `cachenode` and `scheduler`
// on the PATH, as user 65532 with a read-only root file system, /tmp and
// the cache directory mounted as volumes. Build machines and CI runners
// here have no Docker engine, podman or registry access, so instead of a
// Dockerfile this package assembles the image in memory with
// github.com/google/go-containerregistry: an empty base, one layer written
// as a tar by [Build] (the static binaries, the host's CA bundle, a
// minimal /etc/passwd and /etc/group), and a config that says who to run
// as and where the certificates are. [WriteDockerArchive] saves it as a
// tarball that `docker load`, `podman load`, `crane push` and
// `skopeo copy docker-archive:` accept; [WriteOCILayout] as an OCI image
// layout directory.
//
// The build is reproducible: every file gets the same modification time
// (Spec.Created, by default the commit time), entries are sorted, owners
// and modes are fixed and the layer is compressed once with a fixed gzip
// level, so the same binaries give the same image digest on any machine.
//
// [Locus] turns built binaries into a [Spec], checking first that they
// are statically linked Linux executables for the requested architecture
// (a dynamically linked one would fail in the image with a baffling "no
// such file or directory"). scripts/build-image.sh cross-compiles the
// daemons and runs ./internal/ociimage/cmd/mkimage, which calls both.
package ociimage
