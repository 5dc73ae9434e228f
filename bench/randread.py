#!/usr/bin/python3
"""4 KiB random-read benchmark: the rustfs FUSE mount next to the ceiling,
fio on a plain local file of the same size on the same disk, in one run.

Prints IOPS, p50/p99/p99.9 completion latency, the ratio to the ceiling,
read amplification (DSS disk bytes / application bytes, from the counters)
and CPU time per read of all rustfs processes; then the fio commands used.
Asserts nothing: figures only.

  bench/randread.py                        # fresh cluster in a temp dir, removed after
  bench/randread.py --cluster-dir D --keep # use / leave running the cluster in D
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUSTFS = os.path.join(ROOT, "build", "bin", "rustfs")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)


def drop_caches():
    sh(["sync"])
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except PermissionError:
        print("  (not root: page cache not dropped, cold figures are optimistic)")


def fill(path, size):
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    print(f"writing {size >> 20} MiB of random data to {path}")
    sh(["dd", "if=/dev/urandom", f"of={path}", "bs=4M", f"count={size >> 22}", "status=progress",
        "conv=fsync"])


def cluster_cpu_seconds(cluster_dir):
    """utime+stime of every process of the cluster (MDS, DSS, FUSE)."""
    total = 0
    pids = os.path.join(cluster_dir, "pids")
    for name in os.listdir(pids):
        try:
            pid = int(open(os.path.join(pids, name)).read())
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, ValueError):
            pass
    return total / CLK_TCK


def stats(cluster_dir):
    out = subprocess.run([RUSTFS, "stats", "--dir", cluster_dir, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def fio(path, size, iodepth, numjobs, runtime, engine):
    cmd = ["fio", "--name=randread", f"--filename={path}", "--rw=randread", "--bs=4k",
           "--direct=1", f"--ioengine={engine}", f"--iodepth={iodepth}", f"--numjobs={numjobs}",
           f"--size={size}", f"--runtime={runtime}", "--time_based", "--group_reporting",
           "--randrepeat=0", "--norandommap", "--output-format=json"]
    r = subprocess.run(cmd, check=True, capture_output=True, text=True)
    job = json.loads(r.stdout)["jobs"][0]["read"]
    pct = job["clat_ns"]["percentile"]
    return {
        "iops": job["iops"],
        "ios": job["total_ios"],
        "p50": pct["50.000000"] / 1000,
        "p99": pct["99.000000"] / 1000,
        "p999": pct["99.900000"] / 1000,
        "cmd": " ".join(shlex.quote(c) for c in cmd),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cluster-dir", help="cluster folder (started if not running)")
    ap.add_argument("--keep", action="store_true", help="leave the cluster running")
    ap.add_argument("--size", default="1G", help="data set size (default 1G)")
    ap.add_argument("--runtime", type=int, default=20, help="seconds per fio run (default 20)")
    ap.add_argument("--iodepth", type=int, default=32)
    ap.add_argument("--numjobs", type=int, default=4)
    ap.add_argument("--engine", default="libaio", help="fio ioengine for both runs (default libaio)")
    ap.add_argument("--local-dir", default="/var/tmp", help="where the ceiling's local file goes")
    args = ap.parse_args()
    size = parse_size(args.size)

    tmp = None
    cdir = args.cluster_dir
    if not cdir:
        tmp = tempfile.mkdtemp(prefix="rustfs-bench-")
        cdir = os.path.join(tmp, "cluster")
    cdir = os.path.abspath(cdir)
    mnt = os.path.join(os.path.dirname(cdir), "mnt") if tmp else os.path.join(cdir, "mnt")
    sh([RUSTFS, "cluster", "up", "--dir", cdir, "--mount", mnt])
    local = os.path.join(args.local_dir, "rustfs-bench-local.bin")
    try:
        data = os.path.join(mnt, "dataset.bin")
        fill(data, size)
        fill(local, size)

        print(f"\nfio 4 KiB randread, iodepth {args.iodepth} x {args.numjobs} jobs, "
              f"{args.runtime} s, {args.engine}, O_DIRECT, page cache dropped first")
        drop_caches()
        ceiling = fio(local, args.size, args.iodepth, args.numjobs, args.runtime, args.engine)

        drop_caches()
        s0, c0 = stats(cdir), cluster_cpu_seconds(cdir)
        ours = fio(data, args.size, args.iodepth, args.numjobs, args.runtime, args.engine)
        s1, c1 = stats(cdir), cluster_cpu_seconds(cdir)

        def delta(proc, key):
            return s1.get(proc, {}).get(key, 0) - s0.get(proc, {}).get(key, 0)

        app = delta("client", "client.app_bytes_read")
        disk = delta("dss-total", "dss.disk_bytes_read")
        wire = delta("dss-total", "dss.wire_bytes_sent")
        mds = delta("client", "client.mds_rpcs")
        cpu_us = (c1 - c0) * 1e6 / max(1, ours["ios"])

        print(f"\n{'target':<34}{'IOPS':>10}{'p50 us':>10}{'p99 us':>10}{'p99.9 us':>10}{'ratio':>8}")
        for name, r in (("local file (ceiling)", ceiling), ("rustfs FUSE mount, RS 4+2", ours)):
            print(f"{name:<34}{r['iops']:>10.0f}{r['p50']:>10.1f}{r['p99']:>10.1f}{r['p999']:>10.1f}"
                  f"{r['iops'] / ceiling['iops']:>8.2f}")
        print(f"\nread amplification (DSS disk bytes / app bytes): {disk / max(1, app):.3f}"
              f"   wire bytes / app bytes: {wire / max(1, app):.3f}")
        print(f"MDS RPCs during the run: {mds}   cluster CPU per read: {cpu_us:.1f} us "
              f"(MDS + DSS + FUSE, all processes)")
        print("note: the DSS reads shards with O_DIRECT through io_uring and serves repeated pages"
              " from its RAM hot tier (hence amplification below 1); the ceiling reads the raw file"
              " with O_DIRECT.")
        print("\ncommands:")
        print(f"  ceiling: {ceiling['cmd']}")
        print(f"  rustfs:  {ours['cmd']}")
    finally:
        if os.path.exists(local):
            os.unlink(local)
        if args.keep:
            print(f"\ncluster left running, mounted on {mnt}. Stop it with:\n"
                  f"  {RUSTFS} cluster down --dir {cdir}")
        else:
            subprocess.run([RUSTFS, "cluster", "down", "--dir", cdir])
            if tmp:
                sh(["rm", "-rf", tmp])


if __name__ == "__main__":
    sys.exit(main())
