#!/usr/bin/env bash
# Installs the Go tools the tests use, at pinned versions, into $(go env GOPATH)/bin.
# Each is skipped when the pinned version is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
gobin="$(go env GOPATH)/bin"
stamp_dir="$gobin/.locus-tools"
mkdir -p "$stamp_dir"

tools=(
  "github.com/versity/versitygw/cmd/versitygw@v1.8.0"
  "github.com/grpc-ecosystem/grpc-health-probe@v0.4.62"
  "google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12"
  "google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2"
  # helm lint / helm template of helm/locus (internal/chart). Compiling it
  # takes ~3 minutes on 2 cores the first time.
  "helm.sh/helm/v3/cmd/helm@v3.22.0"
)
for t in "${tools[@]}"; do
  name=${t%@*}; name=${name##*/}
  stamp="$stamp_dir/$name@${t#*@}"
  if [ -x "$gobin/$name" ] && [ -f "$stamp" ]; then
    continue
  fi
  echo "installing $t"
  # Outside the module so the project's go.mod is not consulted or changed.
  (cd / && GOFLAGS=-buildvcs=false go install "$t")
  touch "$stamp"
done
