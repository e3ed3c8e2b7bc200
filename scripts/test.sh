#!/usr/bin/env bash
# Sets up, builds and runs every test. GPU tests (label gpu) skip themselves, with a message,
# where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
# The evaluator refuses to run weaker than its sandbox asks. On a machine where a layer cannot work
# (no user namespaces, say), the tests run with that layer degraded, and say so here.
if ! build/warpsmith --workspace build/doctor-ws doctor >build/doctor.txt 2>&1; then
  echo "note: sandbox layers unavailable on this machine; tests run with WARPSMITH_SANDBOX=degraded:"
  sed 's/^/  /' build/doctor.txt
  export WARPSMITH_SANDBOX=degraded
fi
if [[ ! -e /dev/nvidiactl ]]; then
  echo "note: no NVIDIA GPU on this machine: the tests labelled gpu will skip themselves"
fi
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
