#!/usr/bin/env bash
# Builds the service and the harness in release mode and runs the benchmark.
# Options go to the harness: bash bench/run.sh --rows 100000,1000000 --runs 3
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${BENCH_PROFILE:-release}"
if [ "$profile" = release ]; then
  cargo build --release --bin importgate --example bench
else
  cargo build --bin importgate --example bench
fi
exec "target/$profile/examples/bench" "$@"
