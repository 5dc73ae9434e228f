#!/usr/bin/python3
"""Cached 4 KiB reads and open+stat: the native client and the FUSE mount,
each next to a ceiling measured in the same run, against LLD-002 §9.

On a fresh cluster in a temp dir (`rustfs cluster up --dir D --mount M`):
 (a) client_bench cached-read: random 4 KiB Client::Read served by the
     fragment cache, next to RAM memcpy and hash+memcpy ceilings;
 (b) fio 4 KiB randread, O_DIRECT, on the same file through the FUSE mount
     (after one full read pass that warms the daemon's fragment cache), next
     to the same job through libfuse's passthrough_ll on a local copy whose
     page cache is warm (built here from the libfuse3-dev examples);
 (c) client_bench open-stat (Lookup+Open+GetAttr+Release), and os.stat +
     os.open + os.close of random files through the FUSE mount, next to the
     same loop through passthrough_ll and on the local directory itself.
Prints one summary table (figure, ceiling, ratio, target) and every command.
Asserts nothing about time: figures only. Stops the cluster and removes
everything it made, whatever happens.

  bench/client_bench.py [--size 256M --files 100000 --seconds 5 --runtime 8]
"""
import argparse
import json
import mmap
import multiprocessing
import os
import random
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
RUSTFS = os.path.join(BIN, "rustfs")
CLIENT_BENCH = os.path.join(BIN, "client_bench")
STATS_XATTR = "user.rustfs.stats"
COMMANDS = []  # (what, command line), printed at the end


def q(cmd):
    return " ".join(shlex.quote(str(c)) for c in cmd)


def sh(cmd, what=None, **kw):
    if what:
        COMMANDS.append((what, q(cmd)))
    return subprocess.run([str(c) for c in cmd], check=True, **kw)


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * units[s[-1].upper()] if s[-1].upper() in units else int(s)


def fuse_stats(mnt):
    try:
        return json.loads(os.getxattr(mnt, STATS_XATTR))
    except OSError:
        return {}


def delta(a, b, key):
    return b.get(key, 0) - a.get(key, 0)


def run_client_bench(args, what):
    """Runs client_bench, echoing its output; returns its json: line."""
    cmd = [CLIENT_BENCH] + [str(a) for a in args]
    COMMANDS.append((what, q(cmd)))
    print(f"$ {q(cmd)}", flush=True)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    result = None
    for line in p.stdout:
        if line.startswith("json: "):
            result = json.loads(line[6:])
        else:
            print("  | " + line, end="", flush=True)
    if p.wait() != 0 or result is None:
        raise RuntimeError(f"client_bench failed (exit {p.returncode}): {q(cmd)}")
    return result


def fio(path, size, runtime, what, direct=1):
    cmd = ["fio", "--name=cached", f"--filename={path}", "--rw=randread", "--bs=4k",
           f"--direct={direct}", "--ioengine=libaio", "--iodepth=32", "--numjobs=2",
           f"--size={size}", f"--runtime={runtime}", "--time_based", "--group_reporting",
           "--randrepeat=0", "--norandommap", "--output-format=json"]
    COMMANDS.append((what, q(cmd)))
    r = subprocess.run(cmd, check=True, capture_output=True, text=True)
    job = json.loads(r.stdout)["jobs"][0]["read"]
    pct = job["clat_ns"]["percentile"]
    return {"iops": job["iops"], "p50": pct["50.000000"] / 1000, "p99": pct["99.000000"] / 1000}


def warm_copy(src, dst, size):
    """One full O_DIRECT read pass of src in random order (64 KiB reads, so
    the daemon sees random access and caches the pages in its frequency
    tier, the one random reads use), writing the bytes to dst at the same
    offsets: dst becomes a local copy of src."""
    block = 64 << 10
    buf = mmap.mmap(-1, block)  # page-aligned, as O_DIRECT wants
    offs = list(range(0, size, block))
    random.shuffle(offs)
    fd = os.open(src, os.O_RDONLY | os.O_DIRECT)
    out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t0 = time.monotonic()
    try:
        for off in offs:
            n = os.preadv(fd, [buf], off)
            if n != min(block, size - off):
                raise RuntimeError(f"short read at {off} of {src}")
            os.pwrite(out, buf[:n], off)
    finally:
        os.close(fd)
        os.close(out)
    return time.monotonic() - t0


def read_whole(path):
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass


def nofile_raiser(n):
    """preexec_fn: passthrough_ll holds an O_PATH fd per inode the kernel
    knows, so the open+stat loop over n files needs n fds (root may raise
    the hard limit up to fs.nr_open)."""
    def raise_limit():
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = max(soft, n)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
        except (ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return raise_limit


def nofile_limit(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    return 1024


def stat_open_worker(base, n, seconds, seed, out):
    rnd = random.Random(seed)
    names = [os.path.join(base, f"f{i:07d}") for i in range(n)]
    ops = 0
    end = time.monotonic() + seconds
    while True:
        for _ in range(256):
            p = names[rnd.randrange(n)]
            os.stat(p)
            os.close(os.open(p, os.O_RDONLY))
        ops += 256
        if time.monotonic() >= end:
            break
    out.put(ops)


def stat_open_loop(base, n, seconds, procs):
    """os.stat + os.open + os.close of random files of base, in `procs`
    processes: one pass over every file first (cold), then random files
    for `seconds`. Returns (first-pass ops/s, ops/s)."""
    t0 = time.monotonic()
    for i in range(n):
        p = os.path.join(base, f"f{i:07d}")
        os.stat(p)
        os.close(os.open(p, os.O_RDONLY))
    first = n / (time.monotonic() - t0)
    out = multiprocessing.Queue()
    ws = [multiprocessing.Process(target=stat_open_worker, args=(base, n, seconds, 7 + i, out))
          for i in range(procs)]
    t0 = time.monotonic()
    for w in ws:
        w.start()
    total = sum(out.get() for _ in ws)
    for w in ws:
        w.join()
    return first, total / (time.monotonic() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="256M", help="cached data set size (default 256M, "
                    "below the cluster's 1 GiB fragment cache)")
    ap.add_argument("--files", type=int, default=100000, help="files for open+stat (default 100000)")
    ap.add_argument("--threads", type=int, default=2, help="native threads / Python loop processes")
    ap.add_argument("--seconds", type=float, default=5, help="seconds per native run")
    ap.add_argument("--runtime", type=int, default=8, help="seconds per fio run")
    ap.add_argument("--stat-seconds", type=float, default=4, help="seconds per Python open+stat loop")
    ap.add_argument("--max-create-seconds", type=float, default=120,
                    help="stop creating files after this long and measure those made")
    ap.add_argument("--local-dir", default="/var/tmp", help="where the local copies go")
    args = ap.parse_args()
    size = parse_size(args.size)
    if size % (64 << 10):
        sys.exit("--size must be a multiple of 64 KiB")

    tmp = tempfile.mkdtemp(prefix="rustfs-cbench-")
    local = tempfile.mkdtemp(prefix="rustfs-cbench-local-", dir=args.local_dir)
    cdir, mnt, ptmnt = (os.path.join(tmp, x) for x in ("cluster", "mnt", "ptmnt"))
    cfg = os.path.join(cdir, "rustfs.toml")
    ptfs = None
    rows = {}
    notes = []
    try:
        sh([RUSTFS, "cluster", "up", "--dir", cdir, "--mount", mnt], "start the cluster")
        exe, why = B.build_passthrough_ll(tmp, keep_direct=False)
        if exe:
            COMMANDS.append(("build passthrough_ll (O_DIRECT dropped on the backing open)", B.COMMANDS[-1]))
        if not exe:
            print(f"passthrough_ll rows skipped: {why}")
            notes.append(f"passthrough_ll rows skipped: {why}")

        # (a) native cached reads
        print(f"\n== (a) native client, cached 4 KiB random reads, {args.threads} threads")
        a = run_client_bench(["--config", cfg, "cached-read", "--file", "cached.dat", "--size", size,
                              "--threads", args.threads, "--seconds", args.seconds],
                             "native cached reads")

        # (b) fio through the FUSE mount and through passthrough_ll
        print(f"\n== (b) fio 4 KiB randread O_DIRECT, iodepth 32 x 2 jobs, {args.runtime} s")
        data = os.path.join(mnt, "cached.dat")
        local_data = os.path.join(local, "cached.dat")
        w = warm_copy(data, local_data, size)
        read_whole(local_data)  # the local copy's page cache: warm
        print(f"warm pass through the mount (random order, 64 KiB O_DIRECT reads, copied to "
              f"{local_data}): {w:.1f} s")
        s0 = fuse_stats(mnt)
        fuse = fio(data, size, args.runtime, "fio through the rustfs FUSE mount")
        s1 = fuse_stats(mnt)
        hits, misses = delta(s0, s1, "client.cache_page_hits"), delta(s0, s1, "client.cache_page_misses")
        fuse["hit_ratio"] = hits / max(1, hits + misses)
        fuse["mds"] = delta(s0, s1, "client.mds_rpcs")
        fuse["dss_per_app"] = delta(s0, s1, "client.shard_bytes_received") / max(
            1, delta(s0, s1, "client.app_bytes_read"))
        print(f"  rustfs FUSE:     {fuse['iops']:>10.0f} IOPS  p50 {fuse['p50']:.1f} us  p99 "
              f"{fuse['p99']:.1f} us  page hit ratio {fuse['hit_ratio']:.4f}  DSS bytes/app bytes "
              f"{fuse['dss_per_app']:.4f}  MDS RPCs {fuse['mds']}")
        rows["fuse"] = fuse

        # Files for the local open+stat loops, made now so one passthrough mount serves both.
        n_local = args.files
        local_files = os.path.join(local, "files")
        os.makedirs(local_files)
        for i in range(n_local):
            open(os.path.join(local_files, f"f{i:07d}"), "w").close()

        if exe:
            try:
                ptfs = B.Passthrough(exe, local, ptmnt, options="timeout=10",
                                     preexec_fn=nofile_raiser(n_local + 16384))
                COMMANDS.append(("mount passthrough_ll (timeout = rustfs's 10 s lease)", q(ptfs.cmd)))
            except RuntimeError as e:
                notes.append(str(e))
                print(notes[-1])
                exe = None
            else:
                pt = fio(os.path.join(ptmnt, "cached.dat"), size, args.runtime,
                         "fio through passthrough_ll (local copy, page cache warm)")
                print(f"  passthrough_ll:  {pt['iops']:>10.0f} IOPS  p50 {pt['p50']:.1f} us  p99 "
                      f"{pt['p99']:.1f} us")
                rows["pt"] = pt
        kern = fio(local_data, size, args.runtime, "fio on the local copy, buffered (page cache, no FUSE)",
                   direct=0)
        print(f"  local, buffered: {kern['iops']:>10.0f} IOPS  p50 {kern['p50']:.1f} us  p99 "
              f"{kern['p99']:.1f} us")
        rows["kern"] = kern

        # (c) open+stat
        print(f"\n== (c) open+stat, {args.files} files")
        o = run_client_bench(["--config", cfg, "open-stat", "--dir", "files", "--files", args.files,
                              "--threads", args.threads, "--seconds", args.seconds,
                              "--max-create-seconds", args.max_create_seconds],
                             "native open+stat (Lookup+Open+GetAttr+Release)")
        n = o["files"]
        if n < args.files:
            notes.append(f"open+stat measured over {n} files, not {args.files}: creation stopped "
                         f"at --max-create-seconds ({o['created'] / o['create_s']:.0f} files/s)")
        loop_desc = (f"python3 loop, {args.threads} processes: os.stat + os.open + os.close of "
                     f"random files, {args.stat_seconds:.0f} s, after one pass over all {n}")
        COMMANDS.append(("FUSE/passthrough/local open+stat", loop_desc))
        s0 = fuse_stats(mnt)
        t0 = time.monotonic()
        fuse_first, fuse_os = stat_open_loop(os.path.join(mnt, "files"), n, args.stat_seconds,
                                             args.threads)
        s1 = fuse_stats(mnt)
        print(f"  rustfs FUSE:     first pass {fuse_first:>8.0f} ops/s, then {fuse_os:>8.0f} ops/s  "
              f"(daemon MDS RPCs, both: {delta(s0, s1, 'client.mds_rpcs')} for "
              f"{time.monotonic() - t0:.1f} s)")
        pt_os = loc_os = None
        pt_n = n
        if exe:
            pt_n = min(n, nofile_limit(ptfs.proc.pid) - 2000)
            if pt_n < n:
                notes.append(f"passthrough_ll open+stat over the first {pt_n} files only: it holds "
                             f"one fd per known inode and its RLIMIT_NOFILE is "
                             f"{nofile_limit(ptfs.proc.pid)} (could not be raised here)")
            pt_first, pt_os = stat_open_loop(os.path.join(ptmnt, "files"), pt_n, args.stat_seconds,
                                             args.threads)
            print(f"  passthrough_ll:  first pass {pt_first:>8.0f} ops/s, then {pt_os:>8.0f} ops/s"
                  f"  ({pt_n} files)")
        loc_first, loc_os = stat_open_loop(local_files, n, args.stat_seconds, args.threads)
        print(f"  local directory: first pass {loc_first:>8.0f} ops/s, then {loc_os:>8.0f} ops/s")

        # Summary
        def fmt(v, unit=""):
            if v is None:
                return "n/a"
            return f"{v / 1e6:.2f} M{unit}" if v >= 1e6 else f"{v / 1e3:.0f} K{unit}"

        def ratio(a_, b_):
            return f"{a_ / b_:.2f}" if a_ is not None and b_ else "n/a"

        table = [
            ("4K cached read, native, %d thr (IOPS)" % args.threads, a["iops"],
             "RAM memcpy, same threads", a["memcpy_iops"], "> 2 M IOPS/client", 2e6),
            ("  same", a["iops"], "hash lookup + memcpy", a["hash_iops"], "", None),
            ("4K cached read, FUSE fio QD32x2 (IOPS)", fuse["iops"], "passthrough_ll, warm cache",
             rows.get("pt", {}).get("iops"), "(> 2 M is native)", None),
            ("  same", fuse["iops"], "local file, buffered fio", kern["iops"], "", None),
            ("open+stat, native, %d thr (ops/s)" % args.threads, o["ops"], "in-process hash maps",
             o["ceiling_ops"], "> 200 K ops/s/client", 2e5),
            ("open+stat, FUSE, python x%d (ops/s)" % args.threads, fuse_os,
             "same loop, passthrough_ll" + (f" ({pt_n // 1000}K f)" if pt_n < n else ""),
             pt_os, "> 200 K ops/s/client", 2e5),
            ("  same", fuse_os, "same loop, local dir", loc_os, "", None),
        ]
        print("\n== summary (LLD-002 §9 targets; figures only, nothing asserted)")
        print(f"{'measurement':<42}{'ours':>10}  {'ceiling':<32}{'value':>10}{'ratio':>7}  "
              f"{'LLD-002 §9 target':<21}{'ours/target':>11}")
        for name, ours, cname, cval, target, tval in table:
            print(f"{name:<42}{fmt(ours):>10}  {cname:<32}{fmt(cval):>10}{ratio(ours, cval):>7}  "
                  f"{target:<21}{ratio(ours, tval) if tval else '':>11}")
        print(f"\nnative cached read: p50 {a['p50_us']:.2f} us, p99 {a['p99_us']:.2f} us (memcpy "
              f"{a['memcpy_p50_us']:.2f} / {a['memcpy_p99_us']:.2f}); per thread "
              f"{', '.join(f'{x / 1e3:.0f} K' for x in a['per_thread'])} IOPS; fragment cache hit "
              f"ratio {a['hit_ratio']:.4f}; DSS bytes/app bytes {a['dss_per_app']:.4f}; MDS RPCs "
              f"during the run {a['mds_rpcs']}; {a['verified']} sampled reads verified")
        pt = rows.get("pt")
        print(f"FUSE cached read: p50 {fuse['p50']:.1f} us, p99 {fuse['p99']:.1f} us"
              + (f" (passthrough_ll {pt['p50']:.1f} / {pt['p99']:.1f})" if pt else "")
              + f"; daemon page hit ratio {fuse['hit_ratio']:.4f}; MDS RPCs {fuse['mds']}")
        print(f"native open+stat: {o['rpcs_per_op']:.4f} MDS RPCs/op on random files after the first "
              f"pass ({o['first_pass_ops']:.0f} ops/s, {o['first_pass_rpcs_per_op']:.3f} RPCs/op); "
              f"{o['files']} files, created {o['created']} in {o['create_s']:.1f} s "
              f"({o['created'] / max(o['create_s'], 1e-9):.0f}/s)")
        for n_ in notes:
            print("note: " + n_)
        print("\ncommands:")
        for what, cmd in COMMANDS:
            print(f"  {what}:\n    {cmd}")
    finally:
        if ptfs is not None:
            ptfs.close()
        subprocess.run([RUSTFS, "cluster", "down", "--dir", cdir])
        if B.is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", mnt])
        shutil.rmtree(local, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
