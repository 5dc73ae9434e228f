#!/usr/bin/env bash
# Installs the Debian 12 packages rustfs builds and tests with (DESIGN.md §4).
# Idempotent: does nothing when everything is already there.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config
  libisal-dev liburing-dev libfuse3-dev fuse3 libasio-dev
  libprotobuf-dev protobuf-compiler librocksdb-dev
  libtomlplusplus-dev libcli11-dev libspdlog-dev libnuma-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  fio python3 python3-pytest python3-numpy
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
