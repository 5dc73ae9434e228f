#!/usr/bin/python3
"""The random-read demo: fio 4 KiB random reads on the rustfs FUSE mount
beside the same jobs on a plain local file of the same size on the same
disk, in one run.

Cold rows (QD1 and QD32 x 4, O_DIRECT): the client's fragment cache and the
DSS hot tiers are off, the page cache is dropped first, the data set is
4 GiB: every byte comes from the disk. One cached row after them: the RAM
tiers on, a 256 MiB range read once before, labelled as cached. Each row
prints IOPS, p50/p99, the ratio to the local row, read amplification at the
disk device and by rustfs's counter, CPU µs per read of every process, hit
rates; then the commands. Asserts nothing: figures only.

  bench/randread.py                       # fresh cluster in a temp dir, removed after
  bench/randread.py --dir D --keep        # cluster in D/cluster, mounted on D/mnt, left running
"""
import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", help="work folder (cluster in DIR/cluster, mount DIR/mnt); default a temp dir")
    ap.add_argument("--keep", action="store_true", help="leave the cluster running (tiers on)")
    ap.add_argument("--size", default="4G", help="data set size (default 4G)")
    ap.add_argument("--runtime", type=int, default=15, help="seconds per fio run (default 15)")
    ap.add_argument("--port", type=int, default=9400)
    args = ap.parse_args()
    size = B.parse_size(args.size)
    rustfs = os.path.join(B.ROOT, "build", "bin", "rustfs")
    shim = {"LD_PRELOAD": os.path.join(B.ROOT, "build", "src", "librustfs_preload.so")}
    root = os.path.abspath(args.dir) if args.dir else tempfile.mkdtemp(prefix="rustfs-randread-", dir="/var/tmp")
    os.makedirs(root, exist_ok=True)
    cl = B.BenchCluster(root, rustfs, args.port, client_cache=256 << 20, hot_tier=64 << 20)
    local = os.path.join(root, "local.bin")
    dev = B.device_of(root)
    try:
        cl.start(tiers=True)
        data = os.path.join(cl.mnt, "dataset.bin")
        B.fill(data, size)
        B.fill(local, size)
        jobs = [("QD1", ["--ioengine=libaio", "--direct=1", "--iodepth=1"]),
                ("QD32 x 4", ["--ioengine=libaio", "--direct=1", "--iodepth=32", "--numjobs=4"])]
        cl.start(tiers=False)
        rows, base = [], {}
        for name, fio_args in jobs:
            loc = B.measure(f"local {name}", lambda: B.fio("local", local, args.size, fio_args, args.runtime), dev,
                            warmup=lambda: B.fio("local", local, args.size, fio_args, 2))
            ours = B.measure(f"rustfs FUSE {name}", lambda: B.fio("fuse", data, args.size, fio_args,
                                                                    args.runtime, env=shim), dev, cl,
                             warmup=lambda: B.fio("fuse", data, args.size, fio_args, 2, env=shim))
            rows += [loc, ours]
            base[ours["label"]] = loc
        B.print_table(f"cold: {args.size} data set, RS 4+2 on 6 local DSS, RAM tiers off, "
                      f"page cache dropped, {args.runtime} s per row, device {dev}", rows, base)
        print(B.machine_line(cl))
        cl.start(tiers=True)
        cached = lambda: B.fio("fuse", data, "256M", jobs[1][1], args.runtime, env=shim)  # noqa: E731
        cached()  # one pass to fill the tiers
        warm = B.measure("rustfs FUSE QD32 x 4 (cached)", cached, dev, cl)
        base[warm["label"]] = rows[2]
        B.print_table("cached: a 256 MiB range read once before (fragment cache 256 MiB, hot tiers "
                      "6 x 64 MiB on); ratio against the cold local row", [warm], base)
        print("\ndev/app: disk device bytes read per byte fio read; ours: rustfs's counter. CPU us: "
              "CPU of fio and every rustfs process per read.")
        print("\ncommands:")
        for c in B.COMMANDS:
            print("  " + c)
    finally:
        if os.path.exists(local):
            os.unlink(local)
        if args.keep:
            print(f"\ncluster left running (RAM tiers on), mounted on {cl.mnt}. Stop it with:\n"
                  f"  {rustfs} cluster down --dir {cl.dir}")
        else:
            cl.stop()
            if not args.dir:
                shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
