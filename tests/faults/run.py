#!/usr/bin/env python3
"""Fault matrix: a workload with continuous verification while faults are
injected one at a time and then in pairs (up to M = 2), on a real cluster
(MDS, six DSS with RS 4+2, FUSE mount) on loopback: SIGKILL, SIGSTOP,
restart, restart with the data folder wiped, bit flips in stored shards,
the MDS killed and restarted, a network cut (a DSS in a network namespace
of its own, its veth link taken down and up) and a full disk (a DSS's
small tmpfs filled with ballast). Disk faults in-process are
tests/unit/shard_store_fault_test.cc's (FaultyDiskIo).

Each case starts a fresh cluster, writes and fsyncs files (keeping a local
copy of each), injects its faults while the workload goes on, recovers
(restarts what it stopped) and then reads every file whose write was
acknowledged (fsync returned 0) back, byte for byte. It prints one row per
case and, last, `faults: N cases, bytes wrong W, acknowledged writes lost L`.
Errors returned to the workload while a fault is in force are counted, not
failures: losing or corrupting acknowledged data is.

    tests/faults/run.py            # the full matrix
    tests/faults/run.py --quick    # the subset CI runs (tests/e2e/test_fault_matrix.py)

Every case is bounded in time and tears its cluster down, even on failure.
"""
import argparse
import collections
import errno
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from conftest import BIN, Cluster, drop_caches, flip_slot_bytes  # noqa: E402

MiB = 1 << 20


# --- faults: each takes the cluster, returns a function that undoes it ---

def kill_dss(i):
    def f(c):
        c.kill(f"dss-{i}")
        return c.up
    f.__name__ = f"SIGKILL dss-{i}"
    return f


def stop_dss(i):
    def f(c):
        c.kill(f"dss-{i}", signal.SIGSTOP)
        return lambda: c.kill(f"dss-{i}", signal.SIGCONT)
    f.__name__ = f"SIGSTOP dss-{i}"
    return f


def restart_dss(i):
    def f(c):
        c.kill(f"dss-{i}")
        c.up()
        return lambda: None
    f.__name__ = f"restart dss-{i}"
    return f


def wipe_dss(i):
    def f(c):
        c.kill(f"dss-{i}")
        shutil.rmtree(os.path.join(c.dir, f"dss-{i}"))
        c.up()
        return lambda: None
    f.__name__ = f"wipe dss-{i}"
    return f


def flip_bits(i):
    def f(c):
        flip_slot_bytes(c, i)
        return lambda: None
    f.__name__ = f"bit flips dss-{i}"
    return f


def kill_mds():
    def f(c):
        c.kill("mds")
        time.sleep(0.5)
        c.up()
        return lambda: None
    f.__name__ = "SIGKILL+restart mds"
    return f


class NetCut:
    """DSS `i` runs in a network namespace of its own, joined to the host by
    a veth pair (the MDS listens on the host's end); the fault takes the
    link down, so its packets vanish (no reset: peers see timeouts), and
    brings it back up afterwards."""

    def __init__(self, i):
        self.i = i
        self.ns = f"rfs-cut-{os.getpid()}"
        self.host_if, self.ns_if = f"rfc{os.getpid() % 100000}a", f"rfc{os.getpid() % 100000}b"
        self.__name__ = f"network cut dss-{i}"

    def setup(self, c):
        """Before the cluster starts (Cluster's before_start)."""
        def ip(*args):
            subprocess.run(["ip"] + list(args), check=True, capture_output=True)
        ip("netns", "add", self.ns)
        ip("link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
        ip("link", "set", self.ns_if, "netns", self.ns)
        ip("addr", "add", "10.77.0.1/24", "dev", self.host_if)
        ip("link", "set", self.host_if, "up")
        for args in (["addr", "add", "10.77.0.2/24", "dev", self.ns_if], ["link", "set", self.ns_if, "up"],
                     ["link", "set", "lo", "up"]):
            ip("netns", "exec", self.ns, "ip", *args)
        toml = os.path.join(c.dir, "rustfs.toml")
        with open(toml) as f:
            text = f.read()
        text = text.replace(f'"127.0.0.1:{c.port}"', f'"10.77.0.1:{c.port}"')
        text = text.replace(f'"127.0.0.1:{c.port + 1 + self.i}"', f'"10.77.0.2:{c.port + 1 + self.i}"')
        with open(toml, "w") as f:
            f.write(text)
        # Started here, inside the namespace; `cluster up` sees its PID file
        # and leaves it be (and `cluster down` stops it like the others).
        os.makedirs(os.path.join(c.dir, "logs"), exist_ok=True)
        os.makedirs(os.path.join(c.dir, "pids"), exist_ok=True)
        log = open(os.path.join(c.dir, "logs", f"dss-{self.i}.log"), "ab")
        p = subprocess.Popen(["ip", "netns", "exec", self.ns, os.path.join(BIN, "rustfs-dss"), "--config", toml,
                              "--id", str(self.i)], stdout=log, stderr=log, start_new_session=True)
        with open(os.path.join(c.dir, "pids", f"dss-{self.i}.pid"), "w") as f:
            f.write(str(p.pid))

    def __call__(self, c):
        subprocess.run(["ip", "link", "set", self.host_if, "down"], check=True)
        return lambda: subprocess.run(["ip", "link", "set", self.host_if, "up"], check=True)

    def cleanup(self):
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True)


class FullDisk:
    """DSS `i`'s data folder is a 24 MiB tmpfs of its own, which the
    workload fills within seconds (its slot files take what the disk has, so
    a ballast file could not take their room): from then on the DSS refuses
    new shards with ENOSPC and reports no room, and placement leaves it out."""

    def __init__(self, i):
        self.i = i
        self.__name__ = f"full disk dss-{i}"
        self.dir = None

    def setup(self, c):
        self.dir = os.path.join(c.dir, f"dss-{self.i}")
        os.makedirs(self.dir, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", self.dir], check=True)

    def __call__(self, c):
        return lambda: None  # the disk fills by itself

    def cleanup(self):
        if self.dir:
            subprocess.run(["umount", "-l", self.dir], capture_output=True)


SINGLE = [kill_dss(1), stop_dss(2), restart_dss(3), wipe_dss(4), flip_bits(0), kill_mds(), NetCut(5), FullDisk(3)]
PAIRS = [(kill_dss(1), kill_dss(4)), (stop_dss(0), kill_dss(3)), (wipe_dss(2), flip_bits(5)),
         (kill_dss(5), kill_mds()), (NetCut(5), kill_dss(2)), (FullDisk(1), kill_dss(4))]
QUICK = [[kill_dss(1)], [wipe_dss(4)], [flip_bits(0)], [NetCut(5)], [kill_dss(1), kill_dss(4)]]


class Workload:
    """Writes files of random sizes (fsync each), keeps what was
    acknowledged, and reads earlier files back, while faults come and go."""

    def __init__(self, c, local, seed):
        self.c, self.local, self.rnd = c, local, random.Random(seed)
        self.acked = {}  # name -> local path of an acknowledged write
        self.ops = self.errors = self.verified = self.wrong = 0
        self.why = collections.Counter()  # errors by (operation, errno name)
        self.stop = threading.Event()

    def write_one(self, i):
        name = f"f{i}.bin"
        data = self.rnd.randbytes(self.rnd.choice([4096, 100_000, MiB + 7, 5 * MiB]))
        lp = os.path.join(self.local, name)
        with open(lp, "wb") as f:
            f.write(data)
        self.ops += 1
        try:
            fd = os.open(self.c.path(name), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            self.acked[name] = lp
        except OSError as e:
            self.errors += 1
            self.why["write", errno.errorcode.get(e.errno, str(e.errno))] += 1

    def check(self, name):
        with open(self.acked[name], "rb") as f:
            want = f.read()
        self.ops += 1
        try:
            with open(self.c.path(name), "rb") as f:
                got = f.read()
        except OSError as e:
            self.errors += 1  # unreadable now (a fault in force): checked again at the end
            self.why["read", errno.errorcode.get(e.errno, str(e.errno))] += 1
            return None
        self.verified += len(got)
        bad = got != want
        if bad:
            self.wrong += sum(1 for a, b in zip(got, want) if a != b) + abs(len(got) - len(want))
        return not bad

    def run(self, first):
        i = first
        while not self.stop.is_set():
            self.write_one(i)
            i += 1
            if self.acked:
                self.check(self.rnd.choice(sorted(self.acked)))


def run_case(faults, seed, root):
    shaped = [f for f in faults if hasattr(f, "setup")]  # faults that shape the cluster before it starts
    try:
        c = Cluster(os.path.join(root, "c"), config_edits=[
            ("heartbeat_timeout_ms = 5000", "heartbeat_timeout_ms = 1500")],
            before_start=lambda c: [f.setup(c) for f in shaped])
    except BaseException:
        for f in shaped:
            f.cleanup()
        raise
    local = os.path.join(root, "local")
    os.makedirs(local)
    try:
        w = Workload(c, local, seed)
        for i in range(6):  # data that was there before the faults
            w.write_one(i)
        t = threading.Thread(target=w.run, args=(100,))
        t.start()
        undo = []
        try:
            for f in faults:
                undo.append(f(c))
                time.sleep(2)
            time.sleep(2)
        finally:
            w.stop.set()
            t.join(timeout=120)
            for u in undo:
                u()
        c.up()
        time.sleep(2)  # DSS heartbeats resume
        drop_caches()
        lost = 0
        for name in sorted(w.acked):
            ok = w.check(name)
            if not ok:
                lost += 1
        return {"fault": " + ".join(f.__name__ for f in faults), "ops": w.ops, "errors": w.errors,
                "verified": w.verified, "wrong": w.wrong, "lost": lost,
                "why": ", ".join(f"{op} {e} x{n}" for (op, e), n in sorted(w.why.items()))}
    finally:
        c.down()
        for f in shaped:
            f.cleanup()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the CI subset")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--case", help="only the cases whose name contains this (e.g. mds)")
    a = ap.parse_args()
    cases = QUICK if a.quick else [[f] for f in SINGLE] + [list(p) for p in PAIRS]
    if a.case:
        cases = [fs for fs in cases if a.case in " + ".join(f.__name__ for f in fs)]
        if not cases:
            ap.error(f"no case matches {a.case!r}")
    print(f"{'fault':<34} {'ops':>6} {'errors':>7} {'bytes verified':>15} {'bytes wrong':>12} {'acked lost':>11}")
    wrong = lost = 0
    for n, faults in enumerate(cases):
        root = tempfile.mkdtemp(prefix="rustfs-faults-")
        try:
            r = run_case(faults, a.seed + n, root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        wrong += r["wrong"]
        lost += r["lost"]
        print(f"{r['fault']:<34} {r['ops']:>6} {r['errors']:>7} {r['verified']:>15,} {r['wrong']:>12} {r['lost']:>11}"
              + (f"   ({r['why']})" if r["why"] else ""), flush=True)
    print(f"faults: {len(cases)} cases, bytes wrong {wrong}, acknowledged writes lost {lost}")
    return 0 if wrong == 0 and lost == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
