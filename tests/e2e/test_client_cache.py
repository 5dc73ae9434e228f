"""Fragment cache, read-ahead and hints through the mount."""
import fcntl
import json
import mmap
import os
import struct
import subprocess
import sys
import time

from conftest import BIN, ROOT, counter, drop_caches, random_file  # noqa: F401

MiB = 1 << 20
PRELOAD = os.path.join(ROOT, "build", "src", "librustfs_preload.so")
RUSTFS_IOC_MAGIC_GET = 0x80085202
RUSTFS_MAGIC = 0x5255535446530001


def direct_read(fd, off, n):
    buf = mmap.mmap(-1, n)  # page-aligned, as O_DIRECT wants
    got = os.preadv(fd, [buf], off)
    return bytes(buf[:got])


def test_repeated_random_reads_hit_the_fragment_cache(shared_cluster):
    p = shared_cluster.path("hot.bin")
    random_file(p, 16 * MiB, seed=11)
    with open(p, "rb") as f:
        ref = f.read()
    drop_caches()
    fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
    try:
        offs = [(i * 104729 * 4096) % (16 * MiB - 8192) for i in range(200)]
        for o in offs:
            assert direct_read(fd, o, 8192) == ref[o:o + 8192]
        before = shared_cluster.stats()
        for o in offs:  # the same reads again: all from client RAM
            assert direct_read(fd, o, 8192) == ref[o:o + 8192]
        after = shared_cluster.stats()
    finally:
        os.close(fd)

    def d(proc, name):
        return counter(after, proc, name) - counter(before, proc, name)

    assert d("dss-total", "dss.reads") == 0
    # (The file was read sequentially first, so its pages sit in the stream
    # tier; random reads of them are hits there.)
    assert d("client", "client.fragment_cache.hits") + d("client", "client.stream_cache.hits") >= 200
    assert d("client", "client.app_bytes_read") == 200 * 8192


def test_sequential_scan_is_read_ahead(shared_cluster):
    p = shared_cluster.path("seq.bin")
    random_file(p, 24 * MiB, seed=12)
    drop_caches()
    before = shared_cluster.stats()
    fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
    try:
        for off in range(0, 24 * MiB, 128 * 1024):
            direct_read(fd, off, 128 * 1024)
    finally:
        os.close(fd)
    after = shared_cluster.stats()
    prefetched = counter(after, "client", "client.prefetch_bytes") - counter(before, "client", "client.prefetch_bytes")
    hits = counter(after, "client", "client.stream_cache.hits") - counter(before, "client", "client.stream_cache.hits")
    assert prefetched >= 8 * MiB
    assert hits > 0
    assert counter(after, "client", "client.mode_switches_to_sequential") >= 1


def test_ioctl_magic_identifies_a_rustfs_file(shared_cluster):
    p = shared_cluster.path("magic")
    with open(p, "w") as f:
        f.write("x")
    with open(p, "rb") as f:
        out = fcntl.ioctl(f.fileno(), RUSTFS_IOC_MAGIC_GET, b"\0" * 8)
    assert struct.unpack("<Q", out)[0] == RUSTFS_MAGIC


PROBE = r"""
import json, mmap, os, sys, time
path = sys.argv[1]
fd = os.open(path, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
mode_random = os.getxattr(path, "user.rustfs.mode").decode()
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
mode_seq = os.getxattr(path, "user.rustfs.mode").decode()
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
def stats():
    return json.loads(os.getxattr(os.path.dirname(path), "user.rustfs.stats"))
s0 = stats()
os.posix_fadvise(fd, 0, 2 << 20, os.POSIX_FADV_WILLNEED)
deadline = time.time() + 20
while stats().get("client.prefetch_bytes", 0) - s0.get("client.prefetch_bytes", 0) < (2 << 20):
    assert time.time() < deadline, "WILLNEED prefetch did not happen"
    time.sleep(0.05)
dfd = os.open(path, os.O_RDONLY | os.O_DIRECT)
os.posix_fadvise(dfd, 0, 0, os.POSIX_FADV_RANDOM)  # no read-ahead on this handle
buf = mmap.mmap(-1, 4096)
s1 = stats()
for i in range(512):
    os.preadv(dfd, [buf], i * 4096)
s2 = stats()
print(json.dumps({"random": mode_random, "seq": mode_seq,
                  "hints": s2.get("client.hints_received", 0) - s0.get("client.hints_received", 0),
                  "hits": sum(s2.get(k, 0) - s1.get(k, 0) for k in
                              ("client.stream_cache.hits", "client.fragment_cache.hits")),
                  "fetched": s2.get("client.shard_bytes_received", 0) - s1.get("client.shard_bytes_received", 0)}))
"""


def test_fadvise_through_preload_sets_mode_and_willneed_prefetches(shared_cluster, tmp_path):
    p = shared_cluster.path("hinted.bin")
    random_file(p, 8 * MiB, seed=13)
    drop_caches()
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    env = dict(os.environ, LD_PRELOAD=PRELOAD)
    r = subprocess.run(["/usr/bin/python3", str(script), p], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["random"] == "random"
    assert out["seq"] == "sequential"
    assert out["hints"] >= 1
    # Every later read is a cache hit, and nothing more is fetched.
    assert out["hits"] >= 512 and out["fetched"] == 0, out


def test_without_preload_fadvise_does_not_reach_the_daemon(shared_cluster, tmp_path):
    """The control for the test above: the kernel alone drops the hint."""
    p = shared_cluster.path("unhinted.bin")
    with open(p, "wb") as f:
        f.write(b"y" * 4096)
    before = shared_cluster.stats()
    fd = os.open(p, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    os.close(fd)
    after = shared_cluster.stats()
    assert counter(after, "client", "client.hints_received") == counter(before, "client", "client.hints_received")


def test_dss_hot_tier_serves_reads_without_disk(two_clients):
    c, b = two_clients
    p = c.path("tier.bin")
    random_file(p, 8 * MiB, seed=14)
    with open(p, "rb") as f:
        ref = f.read()
    offs = [(i * 7919 * 4096) % (8 * MiB - 4096) for i in range(300)]
    fd = os.open(p, os.O_RDONLY | os.O_DIRECT)  # client A warms the DSS tier
    try:
        for o in offs:
            assert direct_read(fd, o, 4096) == ref[o:o + 4096]
    finally:
        os.close(fd)
    before = c.stats()
    fd = os.open(b.path("tier.bin"), os.O_RDONLY | os.O_DIRECT)  # client B: its own cache is cold
    try:
        for o in offs:
            assert direct_read(fd, o, 4096) == ref[o:o + 4096]
    finally:
        os.close(fd)
    after = c.stats()

    def d(name):
        return counter(after, "dss-total", name) - counter(before, "dss-total", name)

    assert d("dss.reads") >= 300  # B's reads did reach the servers...
    assert d("dss.hot_tier.cache_page_hits") >= 300
    assert d("dss.disk_bytes_read") == 0  # ...and none touched a disk
