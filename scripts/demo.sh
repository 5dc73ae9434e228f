#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: install what is missing,
# build (Release), start a local cluster on loopback (1 MDS, 6 DSS, RS 4+2,
# 4 MiB chunks, 64 KiB stripe unit), mount it with rustfs-fuse, write a 4 GiB
# data set, and run fio 4 KiB random reads next to the same jobs on a plain
# local file: cold (RAM tiers off) at QD1 and QD32 x 4, then one cached row.
# Prints IOPS, p50/p99, ratios, read amplification at the disk, CPU per read.
# The cluster stays up afterwards; the last lines say how to stop it.
#   DEMO_DIR (default /tmp/rustfs-demo)  SIZE (default 4G)  RUNTIME (default 15)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "demo: run as root (FUSE mount with allow_other, dropping the page cache)" >&2
  exit 1
fi
bash scripts/install-deps.sh
bash scripts/build.sh
DEMO_DIR=${DEMO_DIR:-/tmp/rustfs-demo}
exec /usr/bin/python3 bench/randread.py --dir "$DEMO_DIR" --keep \
  --size "${SIZE:-4G}" --runtime "${RUNTIME:-15}"
