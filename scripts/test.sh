#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite:
# unit tests (ctest), the unit tests again under ASan + UBSan with a short
# run of every libFuzzer target (scripts/sanitize.sh), end-to-end tests on
# real processes, a real FUSE mount and real fio (pytest, including the
# fault matrix's quick subset), then pjdfstest on a fresh mount. Needs root
# (FUSE mounts, drop_caches, tmpfs, chown).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
echo "== unit tests"
ctest --test-dir build --output-on-failure -j2
bash scripts/sanitize.sh
echo "== end-to-end tests"
/usr/bin/python3 -m pytest -v -p no:cacheprovider tests/e2e
echo "== POSIX conformance (pjdfstest)"
bash scripts/pjdfstest.sh
