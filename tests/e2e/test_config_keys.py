"""Every key of LLD-002 §7 acts: each test reads the same data with the key
on and off (the native client in a process of its own, with its own copy of
the cluster's rustfs.toml) and checks both the bytes (against the source)
and what the key changes, in the client's own counters."""
import hashlib
import json
import os
import random
import subprocess

import pytest

from conftest import BIN, Cluster, counter

MiB = 1 << 20
PYTHONPATH = os.path.join(os.path.dirname(BIN), "python")

PROBE = r"""
import hashlib, json, sys, time, rustfs
cfg, path, reads = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
cl = rustfs.Client(cfg)
f = cl.open(path)
before = json.loads(cl.stats())
digests = []
for r in reads:  # [offset, length] a pread; ["batch", [[offset, length], ...]] one read_batch
    pieces = f.read_batch(r[1]) if r[0] == "batch" else [f.pread(*r)]
    digests += [hashlib.sha256(p).hexdigest() for p in pieces]
after = json.loads(cl.stats())
print(json.dumps({"digests": digests,
                  "counters": {k: after[k] - before.get(k, 0) for k in after}}))
"""


def probe(c, tmp_path, edits, path, reads):
    """Reads `reads` of `path` with the native client under the cluster's
    config changed by `edits` ((old, new) line pairs); the sha256 of each
    read and the client's counters over the reads."""
    with open(os.path.join(c.dir, "rustfs.toml")) as f:
        text = f.read()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    cfg = tmp_path / f"probe-{abs(hash(tuple(edits)))}.toml"
    cfg.write_text(text)
    r = subprocess.run(["/usr/bin/python3", "-c", PROBE, str(cfg), path, json.dumps(reads)],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=PYTHONPATH))
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def expected(data, reads):
    flat = [p for r in reads for p in (r[1] if r[0] == "batch" else [r])]
    return [hashlib.sha256(data[o:o + n]).hexdigest() for o, n in flat]


@pytest.fixture(scope="module")
def data_file(shared_cluster):
    """A file of three 4 MiB chunks and a bit, written through the mount."""
    data = os.urandom(12 * MiB + 12345)
    with open(shared_cluster.path("keys.bin"), "wb") as f:
        f.write(data)
    return "/keys.bin", data


# Reads in chunk 1, chunk 2, chunk 1 again, chunk 0, and one across 1|2.
READS = [(5 * MiB + 100, 4096), (9 * MiB, 20000), (4 * MiB + 7, 100), (12345, 5000),
         (8 * MiB - 3000, 6000)]
NO_CACHE = ("[fragment_cache]\nenabled = true", "[fragment_cache]\nenabled = false")


def test_prefetch_full_chunkmap(shared_cluster, tmp_path, data_file):
    path, data = data_file
    on = probe(shared_cluster, tmp_path, [], path, READS)
    off = probe(shared_cluster, tmp_path, [("prefetch_full_chunkmap = true", "prefetch_full_chunkmap = false")],
                path, READS)
    assert on["digests"] == off["digests"] == expected(data, READS)
    # On: the whole map came with the open; the reads ask the MDS nothing.
    assert on["counters"].get("client.read_map_fetches", 0) == 0
    # Off: the open brought chunk 0's; the reads fetch chunk 1's and 2's,
    # once each (the read across 1|2 finds both known).
    assert off["counters"]["client.read_map_fetches"] == 2


def test_hold_layout_lease(shared_cluster, tmp_path, data_file):
    path, data = data_file
    reads = READS * 2
    off = probe(shared_cluster, tmp_path, [("hold_layout_lease = true", "hold_layout_lease = false")],
                path, reads)
    assert off["digests"] == expected(data, reads)
    # Off: the map is not trusted from one read to the next.
    assert off["counters"]["client.read_map_fetches"] == len(reads)


def test_partial_read_fast_path(shared_cluster, tmp_path, data_file):
    path, data = data_file
    on = probe(shared_cluster, tmp_path, [NO_CACHE], path, READS)
    off = probe(shared_cluster, tmp_path, [NO_CACHE, ("partial_read_fast_path = true", "partial_read_fast_path = false")],
                path, READS)
    assert on["digests"] == off["digests"] == expected(data, READS)
    wanted = sum(n for _, n in READS)
    # On: only the data shards holding the bytes, no decode; each read in
    # whole 4 KiB blocks at most.
    assert on["counters"].get("client.reconstructions", 0) == 0
    assert on["counters"]["client.shard_bytes_received"] < wanted + 2 * 4096 * len(READS)
    # Off: every read decoded from K = 4 shards' bytes.
    assert off["counters"]["client.reconstructions"] >= len(READS)
    assert off["counters"]["client.shard_bytes_received"] >= 4 * wanted


PLAN = r"""
import json, sys, time, rustfs
cfg, path = sys.argv[1], sys.argv[2]
cl = rustfs.Client(cfg)
f = cl.open(path)
f.submit_access_plan([(i * 16384, 16384) for i in range(200)], 0)
deadline = time.time() + 30  # fetching stops by itself at the limit; wait until it has
last = -1
while time.time() < deadline:
    time.sleep(0.2)
    now = json.loads(cl.stats()).get("client.plan_prefetched_bytes", 0)
    if now == last:
        break
    last = now
print(last)
"""


@pytest.mark.parametrize("edit,entries", [
    (("default_prefetch_depth = 64", "default_prefetch_depth = 8"), 8),
    (('max_prefetch_bytes = "0B"', 'max_prefetch_bytes = "64KiB"'), 4),
])
def test_access_plan_limits(shared_cluster, tmp_path, data_file, edit, entries):
    """A plan nobody reads yet: fetching stops at the depth (entries) or at
    the byte budget, whichever the config sets."""
    path, _ = data_file
    with open(os.path.join(shared_cluster.dir, "rustfs.toml")) as f:
        text = f.read()
    cfg = tmp_path / "plan.toml"
    cfg.write_text(text.replace(*edit))
    r = subprocess.run(["/usr/bin/python3", "-c", PLAN, str(cfg), path], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, PYTHONPATH=PYTHONPATH))
    assert r.returncode == 0, r.stderr[-3000:]
    assert int(r.stdout) == entries * 16384


def test_dss_reply_delay(tmp_root):
    """The emulated network distance holds every DSS reply back."""
    c = Cluster(tmp_root, config_edits=[("dss_reply_delay_us = 0", "dss_reply_delay_us = 500")])
    try:
        data = os.urandom(MiB)
        before = c.stats()
        with open(c.path("f"), "wb") as f:
            f.write(data)
        with open(c.path("f"), "rb") as f:
            assert f.read() == data
        after = c.stats()
        delayed = sum(counter(after, f"dss-{i}", "dss.emulated_reply_delays") -
                      counter(before, f"dss-{i}", "dss.emulated_reply_delays") for i in range(c.ndss))
        assert delayed > 0
    finally:
        c.down()


def test_coalesce_gap_threshold(shared_cluster, tmp_path, data_file):
    """Two 4 KiB reads 8 KiB apart on one data shard (stripe unit 64 KiB),
    asked together: within the default 16 KiB gap they are one piece read
    from the DSS (the gap read too); with the threshold 0, two."""
    path, data = data_file
    reads = [["batch", [[4 * MiB + 4096, 4096], [4 * MiB + 16384, 4096]]]]
    on = probe(shared_cluster, tmp_path, [NO_CACHE], path, reads)
    off = probe(shared_cluster, tmp_path, [NO_CACHE, ('coalesce_gap_threshold = "16KiB"',
                                                      'coalesce_gap_threshold = "0B"')], path, reads)
    assert on["digests"] == off["digests"] == expected(data, reads)
    assert on["counters"]["client.pieces_coalesced"] == 1
    assert on["counters"]["client.shard_bytes_received"] == 16384
    assert off["counters"].get("client.pieces_coalesced", 0) == 0
    assert off["counters"]["client.shard_bytes_received"] == 8192


def test_fragment_cache_grain_size(shared_cluster, tmp_path, data_file):
    """The cache keeps pages in grains of grain_size bytes, each looked up
    (and admitted, and evicted) as one: a 32 KiB read is one 64 KiB grain
    by default, two 16 KiB grains with grain_size = 16KiB."""
    path, data = data_file
    reads = [[5 * MiB, 32768], [5 * MiB, 32768]]
    big = probe(shared_cluster, tmp_path, [], path, reads)
    small = probe(shared_cluster, tmp_path, [('grain_size = "64KiB"', 'grain_size = "16KiB"')], path, reads)
    assert big["digests"] == small["digests"] == expected(data, reads)
    for c in (big["counters"], small["counters"]):  # the same pages cached, then read again
        assert c["client.cache_page_misses"] == c["client.cache_page_hits"] == 8
    # The second read finds one grain, or two.
    assert big["counters"]["client.fragment_cache.hits"] == 1
    assert small["counters"]["client.fragment_cache.hits"] == 2
    assert small["counters"]["client.fragment_cache.misses"] == 2 * big["counters"]["client.fragment_cache.misses"]


HOT_ROUNDS = 10
HOT_PAGES = 8


def hot_then_scan(grains, scanned):
    """Reads of a hot set of pages in HOT_ROUNDS rounds, a one-shot scan of
    one page of each of `scanned` other 64 KiB grains, the hot set again
    (pages of a file of `grains` grains)."""
    rng = random.Random(7)
    picked = rng.sample(range(grains), HOT_PAGES + scanned)
    hot = [[g * 65536 + 4096, 4096] for g in picked[:HOT_PAGES]]
    scan = [[g * 65536 + 8192, 4096] for g in picked[HOT_PAGES:]]
    return [r for _ in range(HOT_ROUNDS) for r in rng.sample(hot, len(hot))] + scan + hot


def test_fragment_cache_policy(shared_cluster, tmp_path, data_file):
    """A one-shot scan larger than the cache between two rounds of a hot
    set: W-TinyLFU (the default) keeps the hot pages, LRU lets the scan
    push them out."""
    path, data = data_file
    reads = hot_then_scan(190, 150)  # of keys.bin
    small = ('capacity = "1GiB"\npolicy = "tinylfu"', 'capacity = "256KiB"\npolicy = "tinylfu"')
    lfu = probe(shared_cluster, tmp_path, [small], path, reads)
    lru = probe(shared_cluster, tmp_path, [small, (small[1], small[1].replace("tinylfu", "lru"))], path, reads)
    assert lfu["digests"] == lru["digests"] == expected(data, reads)
    # Both: the rounds after the first hit every hot page; the scan pages are
    # all new. Then LRU has lost every hot page to the scan, while W-TinyLFU
    # refused the scan pages room against them (most of them: its frequency
    # sketch is a small one at this capacity, and a collision may favour a
    # scan page).
    rounds = HOT_PAGES * (HOT_ROUNDS - 1)
    assert lru["counters"]["client.cache_page_hits"] == rounds
    assert lfu["counters"]["client.cache_page_hits"] >= rounds + HOT_PAGES // 2


def test_stripe_unit(shared_cluster, tmp_root, tmp_path):
    """ec.stripe_unit (the MDS's, for the files it creates): 64 KiB read
    from the start of a file is one data shard's stripe unit at 64 KiB (one
    piece from one DSS), four shards' at 16 KiB."""
    data = os.urandom(1 * MiB)
    reads = [[0, 65536]]
    small = Cluster(tmp_root, config_edits=[('stripe_unit = "64KiB"', 'stripe_unit = "16KiB"')])
    try:
        with open(small.path("s.bin"), "wb") as f:
            f.write(data)
        narrow = probe(small, tmp_path, [NO_CACHE], "/s.bin", reads)
    finally:
        small.down()
    with open(shared_cluster.path("s.bin"), "wb") as f:
        f.write(data)
    wide = probe(shared_cluster, tmp_path, [NO_CACHE], "/s.bin", reads)
    assert narrow["digests"] == wide["digests"] == expected(data, reads)
    assert wide["counters"]["client.batch_segments"] == 1
    assert narrow["counters"]["client.batch_segments"] == 4
