#!/usr/bin/env bash
# Builds the container image the Helm chart (helm/locus) deploys, without a
# container engine: cross-compiles the static cachenode and scheduler
# binaries and packs them with go-containerregistry (internal/ociimage).
set -euo pipefail

usage() {
  cat <<USAGE
Usage: scripts/build-image.sh [--out FILE] [--tag REF] [--arch amd64|arm64] [--oci-layout DIR]

Builds the Locus image without Docker: cachenode and scheduler (CGO_ENABLED=0,
GOOS=linux, -trimpath) in /usr/local/bin, the host's CA bundle, /etc/passwd and
/etc/group with nonroot (65532); runs as 65532:65532. File times are the commit
time (or \$SOURCE_DATE_EPOCH), so rebuilding the same commit gives the same digest.

  --out FILE         docker-archive tarball to write (default: locus-image.tar)
  --tag REF          image name and tag (default: ghcr.io/locuscache/locus:<appVersion
                     from helm/locus/Chart.yaml>)
  --arch ARCH        amd64 or arm64 (default: the host's GOARCH)
  --oci-layout DIR   also write an OCI image layout directory
  -h, --help         this help

Then: docker load -i FILE (or podman load -i FILE), or push without a daemon:
  crane push FILE REF    |    skopeo copy docker-archive:FILE docker://REF
USAGE
}

out=locus-image.tar
tag=
arch=
oci=
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --out|--tag|--arch|--oci-layout)
      if [ $# -lt 2 ]; then echo "build-image.sh: $1 needs a value; see --help" >&2; exit 2; fi
      case "$1" in
        --out) out=$2 ;; --tag) tag=$2 ;; --arch) arch=$2 ;; --oci-layout) oci=$2 ;;
      esac
      shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    --tag=*) tag=${1#*=}; shift ;;
    --arch=*) arch=${1#*=}; shift ;;
    --oci-layout=*) oci=${1#*=}; shift ;;
    *) echo "build-image.sh: unknown argument $1; see --help" >&2; exit 2 ;;
  esac
done
# Relative paths are the caller's; the builds run from the repository root.
abs() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
out=$(abs "$out")
if [ -n "$oci" ]; then oci=$(abs "$oci"); fi
cd "$(dirname "$0")/.."

arch=${arch:-$(go env GOARCH)}
case "$arch" in
  amd64|arm64) ;;
  *) echo "build-image.sh: --arch $arch: want amd64 or arm64" >&2; exit 2 ;;
esac

if [ -z "$tag" ]; then
  app=$(sed -n 's/^appVersion:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}.*/\1/p' helm/locus/Chart.yaml)
  if [ -z "$app" ]; then
    echo "build-image.sh: no appVersion in helm/locus/Chart.yaml; pass --tag" >&2
    exit 2
  fi
  tag="ghcr.io/locuscache/locus:$app"
fi

# The commit stamps the label and, as the file time, makes the image
# reproducible. Outside a git checkout: no revision, time SOURCE_DATE_EPOCH or 0.
revision=$(git rev-parse HEAD 2>/dev/null || true)
# A tree with uncommitted changes is not the commit: say so in the label, as
# the daemons' --version does (+modified).
if [ -n "$revision" ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  revision="$revision-dirty"
  echo "build-image.sh: note: the working tree has uncommitted changes; the revision label is $revision" >&2
fi
created=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD 2>/dev/null || echo 0)}
# -buildvcs: record the revision for the daemons' --version (daemonmain.Version),
# overriding a GOFLAGS=-buildvcs=false; not possible outside a git checkout.
buildvcs=false
if [ -n "$revision" ]; then buildvcs=true; fi

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
for cmd in cachenode scheduler; do
  echo "== go build ./cmd/$cmd (linux/$arch)"
  CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -buildvcs="$buildvcs" \
    -o "$bin/$cmd" "./cmd/$cmd"
done

echo "== mkimage"
# mkimage runs here: build it for this machine, whatever GOOS/GOARCH the
# caller exported for the daemons.
env -u GOOS -u GOARCH -u CGO_ENABLED go run ./internal/ociimage/cmd/mkimage \
  -cachenode "$bin/cachenode" -scheduler "$bin/scheduler" -arch "$arch" \
  -tag "$tag" -out "$out" -revision "$revision" -created "$created" \
  ${oci:+-oci-layout "$oci"}
