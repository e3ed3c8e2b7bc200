#!/usr/bin/env bash
# Sets up, builds and runs every test. GPU tests (label gpu) skip themselves, with a message,
# where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
if [[ ! -e /dev/nvidiactl ]]; then
  echo "note: no NVIDIA GPU on this machine: the tests labelled gpu will skip themselves"
fi
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
