#!/usr/bin/env bash
# POSIX conformance: builds pjdfstest (../shared/third_party/pjdfstest, BSD
# licence; never copied into this repository) into build/pjdfstest, starts a
# fresh local cluster with a FUSE mount, runs `prove -r` inside it and
# prints the summary. Exit status: prove's. Needs root (pjdfstest changes
# owners and makes device nodes) and a built tree (scripts/build.sh).
#
# pjdfstest picks some checks by file-system type (rename/22.t, "rename
# changes ctime", runs only on EXT4, UFS and ZFS). The mount is held to what
# ext4 passes on this machine, so our copy's conf names it EXT4: the same
# 8,827 checks run here as on a local ext4 folder.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SRC=${PJDFSTEST_SRC:-$ROOT/../shared/third_party/pjdfstest}
OUT=$ROOT/build/pjdfstest
if [ ! -x "$OUT/pjdfstest" ]; then
  [ -d "$SRC" ] || { echo "pjdfstest: no source at $SRC (set PJDFSTEST_SRC)" >&2; exit 2; }
  echo "== building pjdfstest from $SRC"
  rm -rf "$OUT"
  cp -r "$SRC" "$OUT"
  (cd "$OUT" && autoreconf -ifs && ./configure && make pjdfstest) >"$ROOT/build/pjdfstest-build.log" 2>&1 ||
    { tail -30 "$ROOT/build/pjdfstest-build.log"; exit 2; }
  sed -i 's|^\(\tfs=`df -PT . .*\)$|\1\n\t[ "${fs}" = "FUSE.RUSTFS" ] \&\& fs=EXT4  # rustfs: run the checks ext4 runs|' \
    "$OUT/tests/conf"
  grep -q 'FUSE.RUSTFS' "$OUT/tests/conf" || { echo "pjdfstest: could not set the fs type in conf" >&2; exit 2; }
fi

work=$(mktemp -d /tmp/rustfs-pjdfstest.XXXXXX)
cleanup() {
  "$ROOT/build/bin/rustfs" cluster down --dir "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
# Free ports below the ephemeral range (the e2e fixtures' rule, tests/e2e/conftest.py).
port=$(cd "$ROOT/tests/e2e" && /usr/bin/python3 -c 'from conftest import free_port_block; print(free_port_block(8))')
"$ROOT/build/bin/rustfs" cluster up --dir "$work/cluster" --mount "$work/mnt" --port "$port" >/dev/null
mkdir "$work/mnt/pjd"
echo "== pjdfstest (prove -r) in a fresh rustfs mount: $work/mnt/pjd"
start=$(date +%s)
rc=0
(cd "$work/mnt/pjd" && prove -r "$OUT/tests") >"$work/prove.log" 2>&1 || rc=$?
# The summary: failed files with their failed checks, totals and result.
sed -n '/^Test Summary Report/,$p' "$work/prove.log"
tail -n 2 "$work/prove.log" | grep -v '^Result' || true
grep '^Result' "$work/prove.log" || tail -n 20 "$work/prove.log"
echo "pjdfstest: $(( $(date +%s) - start )) s"
exit $rc
