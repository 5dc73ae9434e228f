#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: install what is missing,
# build (Release), start a local cluster on loopback (1 MDS, 6 DSS, RS 4+2,
# 4 MiB chunks, 64 KiB stripe unit), mount it with rustfs-fuse, write a 1 GiB
# data set, and run a short fio 4 KiB random-read next to the same job on a
# plain local file. Prints IOPS, p50/p99 latency, read amplification.
# The cluster stays up afterwards; the last lines say how to stop it.
#   DEMO_DIR (default /tmp/rustfs-demo)  SIZE (default 1G)  RUNTIME (default 15)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "demo: run as root (FUSE mount with allow_other, dropping the page cache)" >&2
  exit 1
fi
bash scripts/install-deps.sh
bash scripts/build.sh
DEMO_DIR=${DEMO_DIR:-/tmp/rustfs-demo}
exec /usr/bin/python3 bench/randread.py --cluster-dir "$DEMO_DIR" --keep \
  --size "${SIZE:-1G}" --runtime "${RUNTIME:-15}"
