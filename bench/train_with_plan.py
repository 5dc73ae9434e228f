#!/usr/bin/python3
"""Access plans for training (LLD-002 §4, §9): one shuffled epoch of a small
CPU model over 100k records of 4-64 KiB in one file, read by a PyTorch
DataLoader with 4 worker processes, three ways in one run:

  random   torch's RandomSampler over the file on the rustfs mount
  planned  rustfs.torch.PlannedSampler over the same file: the epoch's order
           goes to the mount when iteration starts, which fetches ahead
  local    RandomSampler over a copy of the file on the local disk

EMULATION: every DSS reply is held back --delay-us (500 µs) on a timer
(emulation.dss_reply_delay_us), standing in for the network between
client and servers that this one machine lacks (tc netem is absent). The DSS
hot tiers are off, the mount restarts (empty client cache) and the page
cache is dropped before each epoch: every epoch starts cold. Each row
prints the epoch time, samples/s, the share of step time spent waiting for
data, and for the mount the plan's hit rate (reads that found their record
fetched or in flight: of the reads that reached the mount), the client
cache's, the reads that reached the mount and the records the plan put in
the kernel's page cache (access_plan.kernel_handoff; their reads never
reach the mount, so the first two rates count only the rest). Asserts
nothing; the last line reads `plan speed-up X.Yx, data wait Z% of step`.

  bench/train_with_plan.py                      # temp dir under /var/tmp, removed after
  bench/train_with_plan.py --dir D --keep       # keep D (data is reused by the next run)
  bench/train_with_plan.py --records 20000      # smaller, quicker
  bench/train_with_plan.py --epochs planned     # one epoch only (e.g. under perf)
"""
import argparse
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def make_records(n, seed):
    """(offset, length) of n records of 4-64 KiB, back to back."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4096, 65537, size=n, dtype=np.uint64)
    offs = np.zeros((n, 2), dtype=np.uint64)
    offs[1:, 0] = np.cumsum(sizes)[:-1]
    offs[:, 1] = sizes
    return offs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", help="work folder; default a temp dir under /var/tmp")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (and the cluster running)")
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--delay-us", type=int, default=500, help="emulated DSS reply delay (µs)")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=64, help="model hidden units: 64 makes a step of about 4 ms here")
    ap.add_argument("--port", type=int, default=9700)
    ap.add_argument("--epochs", default="random,planned,local",
                    help="which epochs to run, in order (e.g. planned alone, to profile it)")
    args = ap.parse_args()
    epochs = args.epochs.split(",")
    if any(e not in ("random", "planned", "local") for e in epochs):
        ap.error("--epochs takes a comma-separated list of random, planned, local")
    rustfs = os.path.join(B.ROOT, "build", "bin", "rustfs")
    root = os.path.abspath(args.dir) if args.dir else tempfile.mkdtemp(prefix="rustfs-train-", dir="/var/tmp")
    os.makedirs(root, exist_ok=True)
    offs = make_records(args.records, seed=1)
    size = int(offs[-1, 0] + offs[-1, 1])
    offs_path = os.path.join(root, "offsets.npy")
    np.save(offs_path, offs)
    local = os.path.join(root, "train-local.bin")
    cl = B.BenchCluster(root, rustfs, args.port, client_cache=1 << 30, hot_tier=64 << 20)
    settings = {("dss_hot_tier", "enabled"): "false"}
    loop = os.path.join(B.ROOT, "bench", "train_loop.py")
    env = {"PYTHONPATH": os.path.join(B.ROOT, "build", "python")}
    rows = []
    try:
        B.fill(local, size)
        cl.start(tiers=True, settings=settings)
        remote = os.path.join(cl.mnt, "train.bin")
        if not (os.path.exists(remote) and os.path.getsize(remote) == size):
            print(f"copying it onto the mount: {remote}", flush=True)
            B.run(["cp", local, remote])
        settings[("emulation", "dss_reply_delay_us")] = str(args.delay_us)
        ways = {"random": ("random", remote), "planned": ("planned", remote), "local": ("random", local)}
        for name in epochs:
            sampler, path = ways[name]
            on_mount = path == remote
            cl.start(tiers=True, settings=settings)  # a fresh mount: nothing cached
            B.drop_caches()
            s0 = cl.stats() if on_mount else None
            cmd = ["/usr/bin/python3", loop, "--sampler", sampler, "--path", path, "--offsets", offs_path,
                   "--workers", args.workers, "--batch", args.batch, "--hidden", args.hidden]
            print(f"epoch: {name} ...", flush=True)
            r = json.loads(B.run(cmd, env=env, capture_output=True, text=True).stdout.strip().splitlines()[-1])
            r["name"] = name
            if on_mount:
                s1 = cl.stats()

                def d(k):
                    return B.delta(s1, s0, "client", k)
                planned = d("client.plan_hits") + d("client.plan_late")
                r["plan_hit"] = B.ratio(planned, planned + d("client.plan_early") + d("client.plan_misses"))
                r["cache_hit"] = B.ratio(d("client.cache_page_hits"),
                                         d("client.cache_page_hits") + d("client.cache_page_misses"))
                r["reads"] = d("client.app_reads")  # reads that reached the mount (FUSE)
                r["handed"] = d("client.plan_handed")  # records the plan put in the kernel's page cache
            rows.append(r)
    finally:
        if not args.keep:
            cl.stop()
            shutil.rmtree(root, ignore_errors=True)
    print(f"\none epoch each: {args.records} records of 4-64 KiB ({size / (1 << 30):.2f} GiB), DataLoader "
          f"{args.workers} workers, batch {args.batch}; EMULATION: DSS replies delayed {args.delay_us} µs; "
          "DSS hot tiers off, client cache emptied and page cache dropped before each epoch")
    print(f"{'epoch':<10}{'seconds':>9}{'samples/s':>11}{'data wait':>11}{'step ms':>9}{'plan hit':>10}"
          f"{'cache hit':>11}{'reads':>9}{'to kernel':>11}")

    def pct(r, k):
        v = r.get(k)
        return "-" if v is None or math.isnan(v) else f"{v:.1%}"  # NaN: nothing to count
    for r in rows:
        wait_share = r["wait_s"] / r["epoch_s"]
        print(f"{r['name']:<10}{r['epoch_s']:>9.1f}{r['samples'] / r['epoch_s']:>11.0f}{wait_share:>11.1%}"
              f"{1000 * r['compute_s'] / r['steps']:>9.2f}{pct(r, 'plan_hit'):>10}{pct(r, 'cache_hit'):>11}"
              f"{r.get('reads', '-'):>9}{r.get('handed', '-'):>11}")
    print("\ncommands:")
    for c in B.COMMANDS:
        print("  " + c)
    by = {r["name"]: r for r in rows}
    if not all(e in by for e in ("random", "planned", "local")):
        return
    # No plan can beat reading a local copy: on a machine whose CPU the job
    # and the cluster share, that row, not the plan's goal, is the ceiling.
    print(f"ceiling: the local copy runs {by['random']['epoch_s'] / by['local']['epoch_s']:.1f}x faster than "
          f"random on the mount; planned takes {by['local']['epoch_s'] / by['planned']['epoch_s']:.0%} of its speed")
    print(f"plan speed-up {by['random']['epoch_s'] / by['planned']['epoch_s']:.1f}x, "
          f"data wait {by['planned']['wait_s'] / by['planned']['epoch_s']:.0%} of step")


if __name__ == "__main__":
    main()
