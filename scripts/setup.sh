#!/usr/bin/env bash
# Installs warpsmith's build and test dependencies from Debian bookworm. Idempotent: packages
# already present are skipped, so a second run does no network work.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libcurl4-openssl-dev libboost1.81-dev nlohmann-json3-dev libsqlite3-dev sqlite3
  libgtest-dev libgmock-dev libcli11-dev libfmt-dev
  libseccomp-dev bubblewrap python3 python3-venv  # venv: scripts/check_sass.py fetches cuobjdump from PyPI
  slurmctld slurmd slurm-client munge
  chromium  # the dashboard's headless browser test (tests/serve_browser_test.cc)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

if ! command -v nvcc >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: the CUDA toolkit (13.x) was not found; install it first (NVRTC and the driver API stubs are needed)" >&2
  exit 1
fi
