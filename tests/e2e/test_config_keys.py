"""Every key of LLD-002 §7 acts: each test reads the same data with the key
on and off (the native client in a process of its own, with its own copy of
the cluster's rustfs.toml) and checks both the bytes (against the source)
and what the key changes, in the client's own counters."""
import hashlib
import json
import os
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
digests = [hashlib.sha256(f.pread(off, n)).hexdigest() for off, n in reads]
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
    return [hashlib.sha256(data[o:o + n]).hexdigest() for o, n in reads]


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
