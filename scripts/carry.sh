#!/usr/bin/env bash
# Packs the binaries built here into .carry/ (stripped), for the GPU machine, which lacks our
# Debian packages. Also packs the shared libraries it might lack.
set -euo pipefail
cd "$(dirname "$0")/.."
exclude="$(git rev-parse --git-common-dir)/info/exclude"
grep -qx '/.carry/' "$exclude" 2>/dev/null || echo '/.carry/' >> "$exclude"
rm -rf .carry && mkdir -p .carry/tests .carry/lib
for b in warpsmith ws_runner ws_compile; do strip -o ".carry/$b" "build/$b"; done
for t in build/tests/*_test; do strip -o ".carry/tests/$(basename "$t")" "$t"; done
for lib in libsqlite3.so.0 libcrypto.so.3; do
  cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')" .carry/lib/
done
du -sh .carry
