#!/usr/bin/python3
"""4 KiB random-read IOPS at iodepth 1, 32 and 256 over the three ways to the
same bytes, in one run:

  local   a plain local file of the same size on the same disk (the ceiling),
          fio libaio, O_DIRECT;
  fuse    the rustfs FUSE mount, fio libaio, O_DIRECT, under
          librustfs_preload.so so that fio's open-time invalidation and
          RANDOM hint reach the daemon as they reach a kernel file system;
  native  the fio engine over librustfs (build/src/librustfs_fio.so): the
          client in fio's process, reads of a queue sent as batches (one
          BatchRead per DSS per batch), same job options.

On a fresh cluster (`rustfs cluster up --dir D --mount M`) with a data set
written through the mount. The page cache is dropped before every run. For
each run it prints IOPS, completion latency p50/p99/p99.9, the ratio to the
ceiling at the same iodepth, read amplification (DSS disk bytes / bytes the
application asked for, and wire bytes / asked), and the hit rates of the
client's fragment cache and the DSS hot tier (4 KiB pages, from the
counters); then every command it ran. Asserts nothing: figures only. Stops
the cluster and removes what it made, whatever happens.

  bench/iops.py [--size 1G] [--runtime 10] [--iodepths 1,32,256] [--build-dir build] [--port 9400]
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import randread  # noqa: E402  (parse_size, drop_caches, fill, stats)

COMMANDS = []  # every command run, printed at the end


def q(cmd, env=None):
    pre = "".join(f"{k}={shlex.quote(v)} " for k, v in (env or {}).items())
    return pre + " ".join(shlex.quote(str(c)) for c in cmd)


def run(cmd, env=None, **kw):
    COMMANDS.append(q(cmd, env))
    full_env = dict(os.environ, **env) if env else None
    return subprocess.run([str(c) for c in cmd], check=True, env=full_env, **kw)


def fio(target, path, size, iodepth, runtime, engine_args=(), env=None):
    # Engine options must follow --ioengine on fio's command line.
    cmd = ["fio", f"--name={target}", f"--filename={path}", "--rw=randread", "--bs=4k",
           "--direct=1"] + list(engine_args) + [
           f"--iodepth={iodepth}", "--numjobs=1", f"--size={size}", f"--runtime={runtime}",
           "--time_based", "--randrepeat=0", "--norandommap", "--output-format=json"]
    out = run(cmd, env=env, capture_output=True, text=True).stdout
    job = json.loads(out)["jobs"][0]
    r, pct = job["read"], job["read"]["clat_ns"]["percentile"]
    return {"iops": r["iops"], "bytes": r["io_bytes"], "errors": job["error"],
            "p50": pct["50.000000"] / 1000, "p99": pct["99.000000"] / 1000,
            "p999": pct["99.900000"] / 1000}


def delta(after, before, proc, key):
    return after.get(proc, {}).get(key, 0) - before.get(proc, {}).get(key, 0)


def ratio(num, den):
    return num / den if den else float("nan")


def counters_of_run(s0, s1, client):
    """Amplification and hit rates of one run from counter deltas. `client`
    holds the client's deltas (the FUSE daemon's or the fio process's)."""
    app = client.get("client.app_bytes_read", 0)
    hits, misses = client.get("client.cache_page_hits", 0), client.get("client.cache_page_misses", 0)
    hot_h = delta(s1, s0, "dss-total", "dss.hot_tier.cache_page_hits")
    hot_m = delta(s1, s0, "dss-total", "dss.hot_tier.cache_page_misses")
    return {"disk_amp": ratio(delta(s1, s0, "dss-total", "dss.disk_bytes_read"), app),
            "wire_amp": ratio(delta(s1, s0, "dss-total", "dss.wire_bytes_sent"), app),
            "client_hit": ratio(hits, hits + misses), "hot_hit": ratio(hot_h, hot_h + hot_m),
            "batch_rpcs_per_read": ratio(client.get("client.batch_reads", 0),
                                         client.get("client.app_reads", 0))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1G", help="data set size (default 1G)")
    ap.add_argument("--runtime", type=int, default=10, help="seconds per fio run (default 10)")
    ap.add_argument("--iodepths", default="1,32,256", help="comma-separated (default 1,32,256)")
    ap.add_argument("--build-dir", default=os.environ.get("RUSTFS_BUILD_DIR", os.path.join(ROOT, "build")),
                    help="build tree with bin/ and src/ (default $RUSTFS_BUILD_DIR, else build/)")
    ap.add_argument("--port", type=int, default=9400,
                    help="MDS port; DSS i listens on port+1+i (default 9400)")
    ap.add_argument("--local-dir", default="/var/tmp", help="where the ceiling's local file goes")
    args = ap.parse_args()
    size = randread.parse_size(args.size)
    depths = [int(d) for d in args.iodepths.split(",")]
    build = os.path.abspath(args.build_dir)
    rustfs = os.path.join(build, "bin", "rustfs")
    randread.RUSTFS = rustfs  # randread.stats() asks this CLI
    engine = os.path.join(build, "src", "librustfs_fio.so")
    shim = os.path.join(build, "src", "librustfs_preload.so")

    tmp = tempfile.mkdtemp(prefix="rustfs-iops-")
    cdir, mnt = os.path.join(tmp, "cluster"), os.path.join(tmp, "mnt")
    local = os.path.join(args.local_dir, "rustfs-iops-local.bin")
    results = []  # (iodepth, target, fio figures, counter figures or None)
    try:
        run([rustfs, "cluster", "up", "--dir", cdir, "--mount", mnt, "--port", args.port])
        cfg = os.path.join(cdir, "rustfs.toml")
        randread.fill(os.path.join(mnt, "dataset.bin"), size)
        COMMANDS.append(f"dd if=/dev/urandom of={mnt}/dataset.bin bs=4M count={size >> 22} conv=fsync")
        randread.fill(local, size)
        COMMANDS.append(f"dd if=/dev/urandom of={local} bs=4M count={size >> 22} conv=fsync")
        targets = ["local", "fuse", "native"]
        if not os.path.exists(engine):
            print(f"note: {engine} not built (no third_party/fio-src): native path skipped")
            targets = targets[:2]

        for depth in depths:
            for target in targets:
                randread.drop_caches()
                s0 = randread.stats(cdir)
                if target == "local":
                    r = fio(target, local, args.size, depth, args.runtime, ["--ioengine=libaio"])
                    results.append((depth, target, r, None))
                    continue
                if target == "fuse":
                    r = fio(target, os.path.join(mnt, "dataset.bin"), args.size, depth, args.runtime,
                            ["--ioengine=libaio"], env={"LD_PRELOAD": shim})
                    s1 = randread.stats(cdir)
                    client = {k: delta(s1, s0, "client", k) for k in s1.get("client", {})}
                else:
                    stats_file = os.path.join(tmp, f"native-{depth}.json")
                    r = fio(target, "/dataset.bin", args.size, depth, args.runtime,
                            [f"--ioengine=external:{engine}", f"--rustfs_config={cfg}",
                             f"--rustfs_stats={stats_file}"])
                    s1 = randread.stats(cdir)
                    with open(stats_file) as f:
                        client = json.loads(f.read().splitlines()[-1])  # a fresh process's counters
                results.append((depth, target, r, counters_of_run(s0, s1, client)))

        ceiling = {d: r["iops"] for d, t, r, _ in results if t == "local"}
        print(f"\nfio 4 KiB randread, 1 job, {args.runtime} s per run, {args.size} data set, "
              f"RS 4+2 on 6 local DSS, page cache dropped before each run")
        hdr = (f"{'target':<8}{'QD':>5}{'IOPS':>10}{'p50 us':>9}{'p99 us':>9}{'p99.9 us':>10}"
               f"{'ratio':>7}{'disk/app':>10}{'wire/app':>10}{'RPC/read':>10}{'client hit':>12}"
               f"{'hot hit':>9}{'err':>5}")
        print(hdr)
        for depth, target, r, c in results:
            line = (f"{target:<8}{depth:>5}{r['iops']:>10.0f}{r['p50']:>9.1f}{r['p99']:>9.1f}"
                    f"{r['p999']:>10.1f}{ratio(r['iops'], ceiling.get(depth)):>7.2f}")
            if c:
                line += (f"{c['disk_amp']:>10.3f}{c['wire_amp']:>10.3f}{c['batch_rpcs_per_read']:>10.2f}"
                         f"{c['client_hit']:>11.1%} {c['hot_hit']:>8.1%}")
            else:
                line += f"{'-':>10}{'-':>10}{'-':>10}{'-':>12}{'-':>9}"
            print(line + f"{r['errors']:>5}")
        print("\nratio: IOPS / local file at the same QD. disk/app, wire/app: DSS disk bytes read, "
              "bytes sent, per byte the application asked for. RPC/read: BatchRead RPCs per read. "
              "client hit: fragment-cache page hits (FUSE daemon, or the fio process). hot hit: "
              "DSS hot-tier page hits. The hot tier and the DSS page cache are per DSS process: "
              "the page cache is dropped between runs, the hot tier is not.")
        print("\ncommands:")
        for c in COMMANDS + [q([rustfs, "cluster", "down", "--dir", cdir]) + "   (on exit)"]:
            print("  " + c)
    finally:
        if os.path.exists(local):
            os.unlink(local)
        subprocess.run([rustfs, "cluster", "down", "--dir", cdir])
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    sys.exit(main())
