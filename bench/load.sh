#!/usr/bin/env bash
# Builds the service and the load client in release mode and runs the load
# test: bash bench/load.sh --clients 50 --seconds 60 [--backend postgres]
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${BENCH_PROFILE:-release}"
if [ "$profile" = release ]; then
  cargo build --release --bin importgate --example load
else
  cargo build --bin importgate --example load
fi
exec "target/$profile/examples/load" "$@"
