#!/usr/bin/python3
"""Copying a real tree with the tools people use: cp -a, rsync -a and tar -x
of a few thousand entries (the kernel and C++ headers of this machine plus
generated files with symlinks, hard links, sparse files, special files),
onto the rustfs mount and onto a local folder on the same disk, in one run.

Prints, per tool: entries, seconds and entries per second for both, and the
ratio; then the commands used. Every copy is checked equal to its source
(the same comparison the e2e tests make). Asserts nothing else: figures.

  bench/posix_copy.py                        # fresh cluster in a temp dir, removed after
  bench/posix_copy.py --cluster-dir D --keep # use / leave running the cluster in D
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from posix_tree import assert_same_tree, make_source_tree  # noqa: E402

RUSTFS = os.path.join(ROOT, "build", "bin", "rustfs")


def timed(cmd):
    t0 = time.time()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cluster-dir", help="use this cluster (started if needed)")
    ap.add_argument("--keep", action="store_true", help="leave the cluster running")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rustfs-copy-", dir="/var/tmp")
    cdir = args.cluster_dir or os.path.join(work, "cluster")
    mnt = os.path.join(cdir, "mnt") if args.cluster_dir else os.path.join(work, "mnt")
    try:
        subprocess.run([RUSTFS, "cluster", "up", "--dir", cdir, "--mount", mnt], check=True,
                       capture_output=True)
        src = os.path.join(work, "src")
        make_source_tree(src)
        archive = os.path.join(work, "tree.tar")
        subprocess.run(["tar", "-C", src, "-cSf", archive, "."], check=True)
        local = os.path.join(work, "local")
        os.makedirs(local)
        target = os.path.join(mnt, "bench-%d" % os.getpid())
        os.makedirs(target)
        tools = {
            "cp -a": lambda d: (["cp", "-a", src, d + "/cp"], d + "/cp"),
            "rsync -a": lambda d: (["rsync", "-a", "--numeric-ids", src + "/", d + "/rs/"], d + "/rs"),
            "tar -x": lambda d: (["sh", "-c", f"mkdir {d}/tar && tar -C {d}/tar --numeric-owner -xpf {archive}"],
                                 d + "/tar"),
        }
        rows, cmds = [], []
        for name, make in tools.items():
            times = {}
            for where, d in (("local", local), ("rustfs", target)):
                cmd, out = make(d)
                subprocess.run(["sync"], check=True)
                times[where] = timed(cmd)
                if where == "local":  # rustfs has made every file durable before it returns
                    times["local+sync"] = times[where] + timed(["sync", "-f", d])
                cmds.append(" ".join(cmd))
                n = assert_same_tree(src, out, hard_links=name != "rsync -a",
                                     mtime_resolution_ns=10**9 if name == "tar -x" else 1)
            rows.append((name, n, times["local"], times["local+sync"], times["rustfs"]))
        print(f"\n{'tool':10} {'entries':>8} {'local s':>9} {'local /s':>9} {'+sync s':>9} "
              f"{'rustfs s':>9} {'rustfs /s':>10} {'ratio':>6} {'vs +sync':>9}")
        for name, n, tl, ts, tr in rows:
            print(f"{name:10} {n:8d} {tl:9.2f} {n / tl:9.0f} {ts:9.2f} {tr:9.2f} {n / tr:10.0f} "
                  f"{tl / tr:6.3f}x {ts / tr:8.3f}x")
        print("\n+sync: the local copy followed by sync -f (the local file system returns before its"
              " data is on disk; rustfs publishes every file durably before close returns).")
        print("\ncommands (local folder, then the mount; every copy checked equal to its source):")
        for c in cmds:
            print("  " + c)
    finally:
        if args.keep:  # the cluster (and what was copied onto it) stays
            for name in ("src", "local", "tree.tar"):
                p = os.path.join(work, name)
                shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.path.exists(p) and os.unlink(p)
            print(f"cluster kept in {cdir}, mounted on {mnt}")
        else:
            subprocess.run([RUSTFS, "cluster", "down", "--dir", cdir], capture_output=True)
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
