#!/usr/bin/env bash
# Packs the binaries built here into .carry/ (stripped), for the GPU machine, which lacks our
# Debian packages. Also packs the shared libraries it might lack.
# Usage: scripts/carry.sh [DEST]   (DEST: also pack the committed source, and copy .carry there)
set -euo pipefail
cd "$(dirname "$0")/.."
exclude="$(git rev-parse --git-common-dir)/info/exclude"
grep -qx '/.carry/' "$exclude" 2>/dev/null || echo '/.carry/' >> "$exclude"
# Build first: packing binaries older than the source sends a judge that is not this commit's.
cmake --build build -j"$(nproc)" >/dev/null
rm -rf .carry && mkdir -p .carry/tests .carry/lib
for b in build/warpsmith build/ws_*; do
  if [[ -f $b && -x $b ]]; then strip -o ".carry/$(basename "$b")" "$b"; fi
done
# The sandbox finds bwrap beside warpsmith; the GPU machine's image has none.
cp /usr/bin/bwrap .carry/bwrap
# The tests with GPU parts (the rest run in CI); CARRY_TESTS=all packs every test (64 MiB limit).
gpu_tests="eval_gpu_test hostile_gpu_test library_baselines_gpu_test runner_kernels_test
  sandbox_test sandbox_layers_test starting_kernel_test export_test init_test runner_digest_gpu_test
  tma_gpu_test"
for t in build/tests/*_test; do
  name=$(basename "$t")
  [[ ${CARRY_TESTS:-gpu} == all || " ${gpu_tests//$'\n'/ } " == *" $name "* ]] || continue
  strip -o ".carry/tests/$name" "$t"
done
for lib in libsqlite3.so.0 libcrypto.so.3 libselinux.so.1 libcap.so.2 libpcre2-8.so.0; do
  cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')" .carry/lib/
done
# fmt and nlohmann_json (headers and CMake packages) for the exported CMake package's test.
mkdir -p .carry/prefix/include .carry/prefix/lib/x86_64-linux-gnu/cmake .carry/prefix/share/cmake
cp -r /usr/include/fmt /usr/include/nlohmann .carry/prefix/include/
cp -r /usr/lib/x86_64-linux-gnu/cmake/fmt .carry/prefix/lib/x86_64-linux-gnu/cmake/
cp -P /usr/lib/x86_64-linux-gnu/libfmt.so* .carry/prefix/lib/x86_64-linux-gnu/
cp -r /usr/share/cmake/nlohmann_json .carry/prefix/share/cmake/
# With a destination, the committed source tree travels too (.carry/src): the GPU machine then
# runs exactly this commit even when the working tree it copies holds other, unfinished work.
if [[ -n ${1:-} ]]; then
  mkdir -p .carry/src && git archive HEAD | tar -x -C .carry/src
  # DEST may be this checkout's own .carry (packing from the main worktree itself).
  if [[ $(realpath -m "$1") != $(realpath -m .carry) ]]; then rm -rf "$1" && cp -a .carry "$1"; fi
  du -sh "$1"
else
  du -sh .carry
fi
