#!/usr/bin/python3
"""4 KiB random reads, cold and cached, over the ways to the same bytes, in
one run, each beside a plain local file of the same size on the same disk:

  local   the local file (the ceiling): fio libaio O_DIRECT, psync and mmap;
  passthrough_ll  libfuse's example over the same local file, O_DIRECT
          passed on: what the FUSE transport alone allows on this machine;
  fuse    the rustfs FUSE mount, the same fio jobs, under
          librustfs_preload.so (fio's RANDOM hint reaches the daemon as it
          reaches a kernel file system);
  native  the fio engine over librustfs (build/src/librustfs_fio.so): the
          client in fio's process, a queue's reads sent as batches;
  1 TCP hop  build/bin/remote_pread: a forked server answering pread of
          the local file over loopback TCP, one connection per reader
          (QD1 and psync x 4 only): one network hop and one disk read with
          no file system work, the floor of any networked read here, with
          both sides sleeping in recv or both polling (TARGETS.md: the hop
          costs a thread wake-up).

This machine's figures swing between runs (a shared host): with --repeat N
each cold job's rows run N rounds, one after the other, and a row shows its
median round and the range of its ratio to local over the rounds.

The "many files" row reads a folder of 1,024 files of the same total size
(each read picks a file at random, as a shuffled epoch over a folder of
samples does), beside the same folder on the local disk.

Cold rows: the client's fragment cache and the DSS hot tiers are OFF and the
page cache is dropped before each row, so every byte comes from the disk;
the data set is at least 4 GiB and 4x the RAM tiers (which are sized for
that in the cached phase). Cached rows: tiers on, a 256 MiB range of the set
read once before it is measured, labelled as cached.

For every row: IOPS, completion latency p50/p99, ratio to the local row it
stands beside, read amplification measured at the disk device
(/sys/block/DEV/stat bytes / bytes fio read) and by rustfs's own counter,
CPU µs per read of every process (fio and all rustfs daemons), cache hit
rates, hedged reads and rebuilt pieces; then every command it ran. Asserts
nothing: figures only. Stops the cluster and removes what it made.

  bench/iops.py [--size 4G] [--runtime 15] [--repeat 1] [--port 9400] [--local-dir /var/tmp]
                [--only QD1,QD32] [--no-cached]
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

CACHED_RANGE = "256M"
MANY_FILES = 1024  # files in the many-files row's data set (4 MiB each at --size 4G)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="4G", help="data set size (default 4G; at least 4 GiB is a cold set)")
    ap.add_argument("--runtime", type=int, default=15, help="seconds per fio run (default 15)")
    ap.add_argument("--port", type=int, default=9400, help="MDS port; DSS i on port+1+i")
    ap.add_argument("--local-dir", default="/var/tmp", help="where the ceiling's local file goes")
    ap.add_argument("--client-cache", default="256M", help="fragment cache in the cached phase")
    ap.add_argument("--hot-tier", default="64M", help="each DSS's hot tier in the cached phase")
    ap.add_argument("--build-dir", default=os.environ.get("RUSTFS_BUILD_DIR", os.path.join(B.ROOT, "build")))
    ap.add_argument("--only", help="comma-separated row names to run (e.g. QD1,QD32), default all")
    ap.add_argument("--no-cached", action="store_true", help="skip the cached rows")
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds of each cold job's rows, one after the other (local, then ours, then "
                         "again): a row shows its median round by ratio and the ratios' range (default 1)")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="a config setting for every phase, as TOML (e.g. random_io.numa_pinning='\"off\"')")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    try:
        settings = B.parse_settings(args.set)
    except ValueError as e:
        ap.error(f"--set {e}")
    size = B.parse_size(args.size)
    build = os.path.abspath(args.build_dir)
    rustfs = os.path.join(build, "bin", "rustfs")
    engine = os.path.join(build, "src", "librustfs_fio.so")
    shim = {"LD_PRELOAD": os.path.join(build, "src", "librustfs_preload.so")}
    client_cache, hot = B.parse_size(args.client_cache), B.parse_size(args.hot_tier)
    tiers_total = client_cache + 6 * hot
    if size < 4 << 30 or size < 4 * tiers_total:
        print(f"note: {args.size} is not a cold data set (wants >= 4 GiB and >= 4 x the RAM tiers, "
              f"{4 * tiers_total >> 20} MiB); the cold rows have the tiers off regardless")

    tmp = tempfile.mkdtemp(prefix="rustfs-iops-", dir=args.local_dir)
    cl = B.BenchCluster(tmp, rustfs, args.port, client_cache, hot)
    local = os.path.join(tmp, "local.bin")
    dev = B.device_of(tmp)
    cached = []
    pt = None
    try:
        cl.start(tiers=True, settings=settings)
        data = os.path.join(cl.mnt, "dataset.bin")
        B.fill(data, size)
        B.fill(local, size)
        only = [o.strip() for o in args.only.split(",")] if args.only else None
        # The many-files row's set: the same size in MANY_FILES files.
        many = not only or "many" in only
        data_many, local_many = os.path.join(cl.mnt, "many"), os.path.join(tmp, "many")
        if many:
            B.fill_files(data_many, MANY_FILES, size)
            B.fill_files(local_many, MANY_FILES, size)
        have_engine = os.path.exists(engine)
        if not have_engine:
            print(f"note: {engine} not built (no third_party/fio-src): native rows skipped")

        def native_job(name, extra, rng=None, runtime=None):
            stats_file = os.path.join(tmp, f"{name}.json")
            args_ = [f"--ioengine=external:{engine}", f"--rustfs_config={cl.config}",
                     f"--rustfs_stats={stats_file}"] + extra
            r = B.fio(name, "/dataset.bin", rng or args.size, args_, runtime or args.runtime)
            with open(stats_file) as f:
                r["_client"] = json.loads(f.read().splitlines()[-1])
            return r

        remote = os.path.join(build, "bin", "remote_pread")
        have_remote = os.path.exists(remote)
        if not have_remote:
            print(f"note: {remote} not built: 1 TCP hop rows skipped")

        def hop_job(threads, direct, wait, runtime=None):
            out = B.run([remote, "--file", local, "--threads", threads, "--direct", int(direct),
                         "--wait", wait, "--seconds", runtime or args.runtime],
                        capture_output=True, text=True).stdout
            return json.loads(out.strip().splitlines()[-1])

        jobs = [  # (label suffix, fio arguments, native arguments or None, 1 TCP hop (threads, direct) or None)
            ("QD1 O_DIRECT", ["--ioengine=libaio", "--direct=1", "--iodepth=1"],
             ["--direct=1", "--iodepth=1"], (1, True)),
            ("QD32 x 4 O_DIRECT", ["--ioengine=libaio", "--direct=1", "--iodepth=32", "--numjobs=4"], None, None),
            ("QD256 O_DIRECT", ["--ioengine=libaio", "--direct=1", "--iodepth=256"],
             ["--direct=1", "--iodepth=256"], None),
            ("psync x 4 buffered", ["--ioengine=psync", "--direct=0", "--numjobs=4"], None, (4, False)),
            ("mmap x 4", ["--ioengine=mmap", "--numjobs=4"], None, None),
            # Each read picks one of MANY_FILES files (a shuffled epoch over
            # a folder of samples): a batch of reads spans many files. One
            # job (fio's jobs sharing a file set kept ~8 reads each in flight
            # at iodepth 32, even on the local disk).
            ("many files QD128 O_DIRECT", ["--ioengine=libaio", "--direct=1", "--iodepth=128"], None, None),
        ]
        cl.start(tiers=False, settings=settings)
        # What the FUSE transport itself allows on this machine: libfuse's
        # passthrough_ll over the same local file, O_DIRECT passed on (cold).
        exe, why = B.build_passthrough_ll(tmp, keep_direct=True)
        if exe:
            pt = B.Passthrough(exe, tmp, os.path.join(tmp, "ptmnt"))
            B.COMMANDS.append(B.q(pt.cmd) + " &")
            pt_file = os.path.join(pt.mnt, "local.bin")
        else:
            print(f"note: passthrough_ll rows skipped: {why}")
        print(f"\ncold: {args.size} data set, RAM tiers off, page cache dropped before each row, "
              f"{args.runtime} s per row, device {dev}")
        print(B.machine_line(cl), flush=True)
        warm = 2  # seconds of the same job after each drop: code faults back in (see benchlib.measure)
        rounds = B.Rounds()  # every round of every row, each beside its own round's local row
        for suffix, fio_args, native_args, hop in jobs:
            if only and not any(suffix.startswith(o + " ") or suffix == o for o in only):
                continue
            is_many = suffix.startswith("many ")
            local_t = local_many if is_many else local
            data_t = data_many if is_many else data
            pt_t = (os.path.join(pt.mnt, "many") if is_many else pt_file) if pt else None
            for rnd in range(args.repeat):
                if args.repeat > 1:
                    print(f"{suffix}: round {rnd + 1} of {args.repeat}", flush=True)
                loc = B.measure(f"local {suffix}", lambda: B.fio("local", local_t, args.size, fio_args, args.runtime),
                                dev, warmup=lambda: B.fio("local", local_t, args.size, fio_args, warm))
                rounds.add(loc, None)
                for wait in ("sleep", "poll") if hop and have_remote else ():
                    r = B.measure(f"1 TCP hop {suffix} ({wait})", lambda: hop_job(*hop, wait), dev,
                                  warmup=lambda: hop_job(*hop, wait, runtime=warm))
                    rounds.add(r, loc)
                if pt:
                    r = B.measure(f"passthrough_ll {suffix}",
                                  lambda: B.fio("pt", pt_t, args.size, fio_args, args.runtime), dev,
                                  daemons=[pt.proc.pid],
                                  warmup=lambda: B.fio("pt", pt_t, args.size, fio_args, warm))
                    rounds.add(r, loc)
                fuse = B.measure(f"fuse {suffix}",
                                 lambda: B.fio("fuse", data_t, args.size, fio_args, args.runtime, env=shim),
                                 dev, cl, warmup=lambda: B.fio("fuse", data_t, args.size, fio_args, warm, env=shim))
                rounds.add(fuse, loc)
                if native_args and have_engine:
                    holder = {}

                    def nat():
                        holder["r"] = native_job("native", native_args)
                        return holder["r"]
                    n = B.measure(f"native {suffix}", nat, dev, cl, lambda: holder["r"]["_client"],
                                  warmup=lambda: native_job("warm", native_args, runtime=warm))
                    rounds.add(n, loc)
        cold, base = rounds.medians()  # base: label -> the local row it is compared to
        B.print_table("cold 4 KiB random reads (no RAM tier of ours serves them)"
                      + (f", median of {args.repeat} rounds" if args.repeat > 1 else ""), cold, base)
        if pt:
            pt.close()
            pt = None
            print("passthrough_ll: libfuse's example file system over the local file (O_DIRECT passed on): "
                  "what a FUSE file system that adds no work of its own reaches on this machine.")
        if have_remote:
            print("1 TCP hop: pread of the local file answered by another process over loopback TCP "
                  "(build/bin/remote_pread), both sides sleeping in recv or both polling: what a networked "
                  "read with no file system work reaches here; rustfs native reads make that one hop, "
                  "FUSE reads one more (kernel to daemon).")

        if not args.no_cached:
            cl.start(tiers=True, settings=settings)
            warm = [("fuse QD32 x 4 O_DIRECT", lambda: B.fio("fuse", data, CACHED_RANGE, jobs[1][1], args.runtime, env=shim))]
            if have_engine:
                holder = {}

                def nat_cached():
                    holder["r"] = native_job("native", ["--direct=1", "--iodepth=256"], CACHED_RANGE)
                    return holder["r"]
                warm.append(("native QD256", nat_cached))
            loc = B.measure("local QD32 x 4 O_DIRECT", lambda: B.fio("local", local, CACHED_RANGE, jobs[1][1],
                                                                      args.runtime), dev)
            cached.append(loc)
            for label, fn in warm:
                fn()  # one pass to fill the tiers
                counters = (lambda: holder["r"]["_client"]) if label.startswith("native") else None
                r = B.measure(label + " (cached)", fn, dev, cl, counters)
                cached.append(r)
                base[r["label"]] = loc
            B.print_table(f"cached 4 KiB random reads: a {CACHED_RANGE} range of the set, read once "
                          f"before (fragment cache {args.client_cache}, hot tiers 6 x {args.hot_tier})",
                          cached, base)
        print("\nratio: IOPS / the local row beside it (with --repeat: the median round's, beside that "
              "round's local row; range: the lowest and highest ratio over the rounds). dev/app: bytes "
              "the disk device read per byte fio read (/sys/block); ours: rustfs's own counter (DSS disk bytes / client bytes). "
              "CPU us: CPU time of fio and every rustfs process per read. hedged: pieces served "
              "another way because their server was slow; rebuilt: pieces decoded from parity.")
        print("\ncommands:")
        for c in B.COMMANDS:
            print("  " + c)
    finally:
        if pt:
            pt.close()
        cl.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
