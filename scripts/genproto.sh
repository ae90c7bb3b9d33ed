#!/usr/bin/env bash
# Regenerates the Go code for proto/**/*.proto with pinned plugin versions.
# Needs protoc (Debian: protobuf-compiler). Installs the plugins into
# $(go env GOPATH)/bin if they are missing or at another version.
#
#   scripts/genproto.sh          regenerate in place
#   scripts/genproto.sh --check  regenerate into a temp dir and fail if anything differs
set -euo pipefail

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2

cd "$(dirname "$0")/.."
gobin="$(go env GOPATH)/bin"
export PATH="$gobin:$PATH"

if ! command -v protoc >/dev/null; then
  echo "genproto: protoc not found; install Debian's protobuf-compiler" >&2
  exit 1
fi
if [ "$(protoc-gen-go --version 2>/dev/null)" != "protoc-gen-go $PROTOC_GEN_GO_VERSION" ]; then
  go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
fi
if [ "$(protoc-gen-go-grpc --version 2>/dev/null)" != "protoc-gen-go-grpc ${PROTOC_GEN_GO_GRPC_VERSION#v}" ]; then
  go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"
fi

out=.
if [ "${1:-}" = "--check" ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi

protos=$(find proto -name '*.proto' | sort)
protoc -I proto \
  --go_out="$out" --go_opt=module=github.com/locuscache/locus \
  --go-grpc_out="$out" --go-grpc_opt=module=github.com/locuscache/locus \
  $protos

if [ "${1:-}" = "--check" ]; then
  status=0
  for f in $(cd "$out" && find proto -name '*.go' | sort); do
    if ! cmp -s "$out/$f" "$f"; then
      echo "genproto: $f is stale; run scripts/genproto.sh and commit the result" >&2
      diff -u "$f" "$out/$f" | head -20 >&2 || true
      status=1
    fi
  done
  for f in $(find proto -name '*.pb.go' | sort); do
    [ -f "$out/$f" ] || { echo "genproto: $f has no .proto source any more; delete it" >&2; status=1; }
  done
  [ $status = 0 ] && echo "genproto: generated code is up to date"
  exit $status
fi
