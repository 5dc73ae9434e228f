#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite:
# unit tests (ctest), then end-to-end tests on real processes, a real FUSE
# mount and real fio (pytest). Needs root (FUSE mounts, drop_caches, tmpfs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
echo "== unit tests"
ctest --test-dir build --output-on-failure -j2
echo "== end-to-end tests"
/usr/bin/python3 -m pytest -v -p no:cacheprovider tests/e2e
