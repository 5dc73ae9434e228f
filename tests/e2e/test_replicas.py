"""Replicated layouts (a directory set to replica:R), and hedged reads: a DSS
stopped with SIGSTOP must not stall reads, for replicated and EC files, even
with an RPC timeout far longer than the test may run."""
import json
import mmap
import os
import random
import shutil
import signal
import subprocess
import sys

import pytest

from conftest import Cluster, counter, drop_caches, files_equal, random_file

MiB = 1 << 20
LAYOUT = "user.rustfs.layout"


def client_stats(c):
    """The FUSE client's counters, without asking the (maybe stopped) DSS."""
    return json.loads(os.getxattr(c.mnt, "user.rustfs.stats"))


def replica_dir(c, name, spec=b"replica:3"):
    d = c.path(name)
    os.mkdir(d)
    os.setxattr(d, LAYOUT, spec)
    return d


def test_replicated_directory_reads_and_writes_byte_exact(cluster, tmp_path):
    d = replica_dir(cluster, "r3")
    assert os.getxattr(d, LAYOUT) == b"replica:3"
    src = tmp_path / "src.bin"
    random_file(src, 24 * MiB + 12345, seed=31)
    dst = os.path.join(d, "data.bin")
    shutil.copyfile(src, dst)
    assert os.getxattr(dst, LAYOUT) == b"replica:3"  # inherited at create
    drop_caches()
    assert files_equal(src, dst)

    # Random overwrites (read-modify-write of rows) against a local copy.
    rnd = random.Random(5)
    with open(src, "r+b") as a, open(dst, "r+b") as b:
        for _ in range(40):
            off = rnd.randrange(0, 24 * MiB)
            blob = rnd.randbytes(rnd.randrange(1, 200000))
            for f in (a, b):
                f.seek(off)
                f.write(blob)
    drop_caches()
    assert files_equal(src, dst)

    # Each replica is a full copy: one replica's DSS gone, every byte still reads.
    cluster.kill("dss-1")
    drop_caches()
    assert files_equal(src, dst)
    # Reads of a replicated file never decode.
    assert counter(cluster.stats(), "client", "client.reconstructions") == 0


def test_layout_xattr_refuses_bad_specs(cluster):
    d = cluster.path("bad")
    os.mkdir(d)
    for spec in (b"replica:0", b"replica:7", b"ec:4", b"ec:6+3", b"mirror:2", b""):
        with pytest.raises(OSError) as e:
            os.setxattr(d, LAYOUT, spec)
        assert e.value.errno == 22, spec  # EINVAL
    assert os.getxattr(d, LAYOUT) == b"ec:4+2"
    f = cluster.path("full.bin")
    with open(f, "wb") as out:
        out.write(b"x" * 5000)
    with pytest.raises(OSError) as e:  # placed data keeps its layout
        os.setxattr(f, LAYOUT, b"replica:2")
    assert e.value.errno == 22
    empty = cluster.path("empty.bin")
    open(empty, "wb").close()
    os.setxattr(empty, LAYOUT, b"replica:2")
    with open(empty, "wb") as out:
        out.write(b"y" * 70000)
    drop_caches()
    with open(empty, "rb") as inp:
        assert inp.read() == b"y" * 70000


READER = r"""
import mmap, os, random, sys
path, ref, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
want = open(ref, "rb").read()
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
rnd = random.Random(seed)
for _ in range(n):
    off = rnd.randrange(0, len(want) // 4096) * 4096
    assert os.preadv(fd, [buf], off) == 4096
    if buf[:] != want[off:off + 4096]:
        sys.exit("wrong bytes at %d" % off)
print("ok")
"""


@pytest.fixture
def slow_rpc_cluster(tmp_root):
    # No fragment cache (every read reaches a DSS) and an RPC timeout of 90
    # s: a read that waits for the stopped server instead of hedging cannot
    # finish within the reader's 60 s limit (1500 hedged reads take seconds).
    c = Cluster(tmp_root, config_edits=[
        ("rpc_timeout_ms = 5000", "rpc_timeout_ms = 90000"),
        ("[fragment_cache]\nenabled = true", "[fragment_cache]\nenabled = false"),
    ])
    try:
        yield c
    finally:
        c.down()


@pytest.mark.parametrize("layout", [b"replica:3", b"ec:4+2"])
def test_sigstopped_dss_is_hedged_around(slow_rpc_cluster, tmp_path, layout):
    c = slow_rpc_cluster
    d = replica_dir(c, "h", layout)
    src = tmp_path / "src.bin"
    random_file(src, 32 * MiB, seed=8)
    dst = os.path.join(d, "data.bin")
    shutil.copyfile(src, dst)
    drop_caches()
    reader = [sys.executable, "-c", READER, dst, str(src)]
    # Warm up: the hedge delay follows the recent p95 of healthy reads.
    subprocess.run(reader + ["300", "1"], check=True, timeout=120)
    before = client_stats(c)
    victim = c.pid("dss-2")
    os.kill(victim, signal.SIGSTOP)
    try:
        r = subprocess.run(reader + ["1500", "2"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr
        after = client_stats(c)
    finally:
        os.kill(victim, signal.SIGCONT)
    hedged = after.get("client.hedged_reads", 0) - before.get("client.hedged_reads", 0)
    assert hedged >= 1, "no read was hedged, yet none waited for the stopped DSS"
