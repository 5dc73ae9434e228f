#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite:
# unit tests (ctest), end-to-end tests on real processes, a real FUSE mount
# and real fio (pytest), then pjdfstest on a fresh mount. Needs root (FUSE
# mounts, drop_caches, tmpfs, chown).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
echo "== unit tests"
ctest --test-dir build --output-on-failure -j2
echo "== end-to-end tests"
/usr/bin/python3 -m pytest -v -p no:cacheprovider tests/e2e
echo "== POSIX conformance (pjdfstest)"
bash scripts/pjdfstest.sh
