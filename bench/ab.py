#!/usr/bin/env python3
"""A/B: two or more builds (or configurations) of rustfs on one cold data
set, their runs alternated round by round, so a change is judged inside one
window of this VM's speed (which drifts 2x between windows: only figures
taken side by side count).

Each variant is NAME=BUILD_DIR[:SECTION.KEY=VALUE;...], BUILD_DIR holding
bin/ and src/*.so as build/ does (to keep an old build: copy build/bin and
build/src/*.so into a folder before rebuilding). Every round restarts the
cluster with each variant's binaries and settings in turn (RAM tiers off,
page cache dropped before each job) and runs the jobs:

  lqd1  local file, libaio O_DIRECT QD1      lps4  local file, psync x 4
  nqd1  native fio engine QD1                fqd1  FUSE, libaio O_DIRECT QD1
  fps4  FUSE, buffered psync x 4             fmm4  FUSE, mmap x 4
  fq32  FUSE, libaio O_DIRECT QD32 x 4

then prints each job's IOPS per round and each variant's mean change
against the first variant's run of the same round. Figures only; asserts
nothing. Stops the cluster and removes what it made.

  bench/ab.py --variant base=/tmp/base --variant new=build [--rounds 3] [--jobs nqd1,fqd1,fps4]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile

import benchlib as B

JOBS = {  # name: (read through: local | native | fuse, fio arguments; ENGINE and CONFIG filled in)
    "lqd1": ("local", ["--ioengine=libaio", "--direct=1", "--iodepth=1"]),
    "lps4": ("local", ["--ioengine=psync", "--direct=0", "--numjobs=4"]),
    "nqd1": ("native", ["--ioengine=external:ENGINE", "--rustfs_config=CONFIG", "--direct=1", "--iodepth=1"]),
    "fqd1": ("fuse", ["--ioengine=libaio", "--direct=1", "--iodepth=1"]),
    "fps4": ("fuse", ["--ioengine=psync", "--direct=0", "--numjobs=4"]),
    "fmm4": ("fuse", ["--ioengine=mmap", "--numjobs=4"]),
    "fq32": ("fuse", ["--ioengine=libaio", "--direct=1", "--iodepth=32", "--numjobs=4"]),
}


def parse_variant(text, ap):
    name, _, rest = text.partition("=")
    build, _, sets = rest.partition(":")
    if not name or not build:
        ap.error(f"--variant {text}: want NAME=BUILD_DIR[:SECTION.KEY=VALUE;...]")
    build = os.path.abspath(build)
    if not os.path.exists(os.path.join(build, "bin", "rustfs")):
        ap.error(f"--variant {text}: no {build}/bin/rustfs")
    try:
        return name, build, B.parse_settings(filter(None, sets.split(";")))
    except ValueError as e:
        ap.error(f"--variant {text}: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", action="append", required=True, help="NAME=BUILD_DIR[:SECTION.KEY=VALUE;...]")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", default="lqd1,nqd1,fqd1,fps4,fmm4", help="comma-separated, of: " + ",".join(JOBS))
    ap.add_argument("--runtime", type=int, default=8, help="seconds per job")
    ap.add_argument("--size", default="4G", help="data set size (at least 4 GiB is a cold set)")
    ap.add_argument("--port", type=int, default=9500)
    ap.add_argument("--local-dir", default="/var/tmp")
    args = ap.parse_args()
    variants = [parse_variant(v, ap) for v in args.variant]
    if len({v[0] for v in variants}) != len(variants):
        ap.error("variant names must differ")
    jobs = args.jobs.split(",")
    for j in jobs:
        if j not in JOBS:
            ap.error(f"unknown job {j}; jobs: {','.join(JOBS)}")
    # Every variant names every key any variant sets: the config file keeps
    # what the previous start wrote, so a key set by one must be reset by the others.
    keys = {k for _, _, s in variants for k in s}
    for name, _, s in variants:
        missing = keys - s.keys()
        if missing:
            ap.error(f"variant {name} does not set {sorted(missing)} (another variant does)")

    size = B.parse_size(args.size)
    tmp = tempfile.mkdtemp(prefix="rustfs-ab-", dir=args.local_dir)
    local = os.path.join(tmp, "local.bin")
    # One cluster folder (one data set), started by each variant's binaries in turn.
    clusters = {name: B.BenchCluster(tmp, os.path.join(build, "bin", "rustfs"), args.port, 64 << 20, 64 << 20)
                for name, build, _ in variants}
    cl = None
    iops = {}  # (job, variant) -> [IOPS per round]
    try:
        for r in range(args.rounds):
            for name, build, settings in variants:
                cl = clusters[name]
                cl.start(tiers=False, settings=settings)
                data = os.path.join(cl.mnt, "dataset.bin")
                B.fill(data, size)
                if any(JOBS[j][0] == "local" for j in jobs):
                    B.fill(local, size)
                engine = os.path.join(build, "src", "librustfs_fio.so")
                shim = {"LD_PRELOAD": os.path.join(build, "src", "librustfs_preload.so")}
                for j in jobs:
                    via, fio_args = JOBS[j]
                    fio_args = [a.replace("ENGINE", engine).replace("CONFIG", cl.config) for a in fio_args]
                    path = {"local": local, "native": "/dataset.bin", "fuse": data}[via]
                    B.drop_caches()
                    f = B.fio(j, path, args.size, fio_args, args.runtime, env=shim if via == "fuse" else None)
                    iops.setdefault((j, name), []).append(f["iops"])
                    print(f"round {r} {name:>10} {j}: {f['iops']:9.0f} IOPS  p50 {f['p50']:6.0f} us  "
                          f"p99 {f['p99']:6.0f} us", flush=True)
                cl.stop()
        first = variants[0][0]
        print(f"\nIOPS per round, and the mean change against {first} in the same round:")
        for j in jobs:
            for name, _, _ in variants:
                v = iops[(j, name)]
                row = f"{j} {name:>10} " + " ".join(f"{x:9.0f}" for x in v)
                if name != first:
                    change = statistics.mean(x / b - 1 for x, b in zip(v, iops[(j, first)]))
                    row += f"   {change:+.0%}"
                print(row)
        print("\ncommands (each round ran these again):")
        for c in dict.fromkeys(B.COMMANDS):
            print("  " + c)
    finally:
        if cl:
            cl.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
