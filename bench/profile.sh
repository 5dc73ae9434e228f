#!/usr/bin/env bash
# Where the CPU of cold 4 KiB random reads goes: a fresh cluster with its RAM
# tiers off, fio reading a data set through the FUSE mount, and `perf record`
# (software cpu-clock: this VM has no hardware counters) over the whole
# machine for part of the run. Prints the share of samples per process
# (thread name), then the top functions of each rustfs process and of fio,
# kernel and user space together; then where the reads in flight sit
# (requests the kernel holds for the mount, from fusectl's `waiting`, which
# it mounts if it must, and reads in flight at the disk, sampled every 10 ms
# during the profile); then the commands. Figures only.
#
#   bench/profile.sh [fio job args...]
#   SIZE (default 2G)  RUNTIME (default 20)  PROFILE_SECONDS (default 10)  PORT (default 9600)
#   KEEP_PERF=path: keep perf.data there for further `perf report` (e.g. --children)
#   default job: --ioengine=libaio --direct=1 --iodepth=32 --numjobs=4
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SIZE=${SIZE:-2G}
RUNTIME=${RUNTIME:-20}
PROFILE_SECONDS=${PROFILE_SECONDS:-10}
PORT=${PORT:-9600}
JOB=("$@")
[ ${#JOB[@]} -eq 0 ] && JOB=(--ioengine=libaio --direct=1 --iodepth=32 --numjobs=4)
command -v perf >/dev/null || { echo "profile: perf not found (Debian: linux-perf)" >&2; exit 2; }

work=$(mktemp -d /var/tmp/rustfs-profile.XXXXXX)
fusectl=/sys/fs/fuse/connections
mounted_fusectl=0
cleanup() {
  "$ROOT/build/bin/rustfs" cluster down --dir "$work/cluster" >/dev/null 2>&1 || true
  [ "$mounted_fusectl" = 1 ] && umount "$fusectl" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cmds=()
say() { cmds+=("$*"); "$@"; }

say "$ROOT/build/bin/rustfs" cluster up --dir "$work/cluster" --port "$PORT" --config-only >/dev/null
# Cold: the client's fragment cache and the DSS hot tiers off.
sed -i '/^\[fragment_cache\]/,/^\[/ s/^enabled = true/enabled = false/; /^\[dss_hot_tier\]/,/^\[/ s/^enabled = true/enabled = false/' \
  "$work/cluster/rustfs.toml"
say "$ROOT/build/bin/rustfs" cluster up --dir "$work/cluster" --mount "$work/mnt" >/dev/null
count=$(( $(numfmt --from=iec "$SIZE") >> 22 ))
say dd if=/dev/urandom of="$work/mnt/data.bin" bs=4M count="$count" conv=fsync status=none
sync
echo 3 >/proc/sys/vm/drop_caches

export LD_PRELOAD="$ROOT/build/src/librustfs_preload.so"
fio_cmd=(fio --name=profile --filename="$work/mnt/data.bin" --rw=randread --bs=4k --size="$SIZE"
         --runtime="$RUNTIME" --time_based --randrepeat=0 --norandommap --group_reporting "${JOB[@]}")
cmds+=("LD_PRELOAD=$LD_PRELOAD ${fio_cmd[*]}")
"${fio_cmd[@]}" >"$work/fio.txt" &
fio_pid=$!
unset LD_PRELOAD
sleep 3
# Where the reads in flight sit: the kernel's requests for our mount (fusectl
# `waiting`: queued for the daemon or being served by it; the connection is
# named by the mount's device minor) and the disk's reads in flight.
if ! mountpoint -q "$fusectl" && mount -t fusectl fusectl "$fusectl" 2>/dev/null; then mounted_fusectl=1; fi
dev=$(stat -c %d "$work/mnt")
waiting="$fusectl/$(( (dev & 0xff) | ((dev >> 12) & 0xfff00) ))/waiting"
disk=$(cd bench && python3 -c 'import sys, benchlib; print(benchlib.device_of(sys.argv[1]))' "$work")
sample() {  # every 10 ms for PROFILE_SECONDS, without a fork per sample
  local n=0 w_sum=0 w_max=0 d_sum=0 d_max=0 w d _ tick
  exec {tick}<> <(:)
  local end=$(( SECONDS + PROFILE_SECONDS ))
  while [ "$SECONDS" -lt "$end" ]; do
    w=0; [ -r "$waiting" ] && read -r w <"$waiting"
    read -r d _ <"/sys/block/$disk/inflight"
    n=$((n + 1)); w_sum=$((w_sum + w)); d_sum=$((d_sum + d))
    [ "$w" -gt "$w_max" ] && w_max=$w; [ "$d" -gt "$d_max" ] && d_max=$d
    read -r -t 0.01 -u "$tick" _ || true
  done
  if [ -r "$waiting" ]; then
    echo "FUSE requests the kernel holds for the mount (fusectl waiting): mean $((w_sum / n)), max $w_max ($n samples)"
  else
    echo "FUSE requests the kernel holds: not available ($waiting unreadable)"
  fi
  echo "reads in flight at $disk (/sys/block/$disk/inflight): mean $((d_sum / n)), max $d_max"
}
sample >"$work/inflight.txt" &
sampler=$!
say perf record -q -e cpu-clock -F 999 -a -g -o "$work/perf.data" -- sleep "$PROFILE_SECONDS" 2>/dev/null
wait "$sampler"
wait "$fio_pid"
[ -n "${KEEP_PERF:-}" ] && cp "$work/perf.data" "$KEEP_PERF"
grep -E "IOPS=|lat \(usec\)|clat percentiles" "$work/fio.txt" | head -3

echo
echo "== samples per process (all CPUs, ${PROFILE_SECONDS} s)"
{ perf report -i "$work/perf.data" --stdio --sort comm --no-children 2>/dev/null | grep -E '^ +[0-9]' | head -15; } || true
# Per process: its threads' samples summed by function. Not `perf report
# --comm`: with it, perf 6.x listed none of dss-io's top kernel functions
# (iowrite16, __schedule: most of its cost, attributed to dss-io by
# `--sort comm`). The FUSE daemon's reads run on its fuse-ring-N threads.
perf report -i "$work/perf.data" --stdio --sort comm,dso,sym --no-children -g none 2>/dev/null |
  grep -E '^ +[0-9]' >"$work/by_comm.txt" || true
for group in "FUSE daemon:rustfs-fuse|fuse-ring-.*" "DSS I/O threads:dss-io" "fio:fio" "MDS:rustfs-mds"; do
  echo
  echo "== top functions of the ${group%%:*} (threads ${group#*:})"
  awk -v re="^(${group#*:})\$" '$2 ~ re {
      pct = $1; sub(/%/, "", pct); key = $3; for (i = 4; i <= NF; i++) key = key " " $i
      sum[key] += pct; total += pct }
    END { printf "%8.2f%%  (all of its samples)\n", total
          for (k in sum) printf "%8.2f%%  %s\n", sum[k], k }' "$work/by_comm.txt" | sort -t% -k1,1 -rn | head -26 || true  # head may close the pipe early (pipefail)
done
echo
echo "== where the reads in flight sit (sampled every 10 ms during the profile)"
cat "$work/inflight.txt"
echo
echo "commands:"
for c in "${cmds[@]}"; do echo "  $c"; done
