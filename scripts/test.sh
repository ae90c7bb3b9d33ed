#!/usr/bin/env bash
# The project's test command (README, CI). Installs the pinned Go tools the
# integration tests start (versitygw, grpc-health-probe), then runs every
# package's tests: the concurrent packages under the race detector, the pure
# ones (policies, ring, simulators: CPU-heavy, single-threaded) without it.
#
# Tests that need a tool that is missing here (etcd, aws, s3cmd, rclone,
# promtool) skip with a message; set LOCUS_REQUIRE_TOOLS=1 to make that a
# failure, as CI does.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$(go env GOPATH)/bin:$PATH"

scripts/install-tools.sh

# Packages whose code runs goroutines, locks or sockets: tested with -race.
race_re='^github.com/locuscache/locus/(pkg/(cache|cache/cachetest|membership|node|node/nodetest|node/daemon|scheduler/schedulertest|scheduler|client|gateway|origin|origin/origintest|parquetx|readpath)|cmd/(cachenode|scheduler|locusctl)|internal/(localcluster|testproc|daemonmain|tlsreload))$'

all=$(go list ./...)
race=$(echo "$all" | grep -E "$race_re" || true)
plain=$(echo "$all" | grep -vE "$race_re" || true)

status=0
if [ -n "$race" ]; then
  echo "== go test -race (concurrent packages)"
  go test -race -count=1 -timeout 15m $race || status=1
fi
# The race detector slows code ~10x, so the concurrent packages' speed,
# memory and size checks skip under it; run those again without it.
echo "== go test (speed and memory checks of race-tested packages)"
go test -count=1 -timeout 10m -run 'TestZeroCopySumRatio|TestReindexMillionPages|TestIndexMemoryPerPage' ./pkg/cache || status=1
go test -count=1 -timeout 10m -run 'TestHugeRangeBoundedMemory' ./pkg/node || status=1
if [ -n "$plain" ]; then
  echo "== go test (pure packages and tools)"
  go test -count=1 -timeout 15m $plain || status=1
fi
# The simulator replays in parallel (sim.Run): its runner's tests under -race
# (the trace replays themselves are the pure, CPU-heavy part tested above).
echo "== go test -race (pkg/cache/sim runner)"
go test -race -count=1 -timeout 5m -run 'TestRun' ./pkg/cache/sim || status=1
exit $status
