"""Serving through failures: writes go on while servers are down (down to
layout.min_write_shards), repair rebuilds what is missing so that M more
failures are survivable again. Real MDS, DSS and FUSE processes."""
import os
import shutil
import subprocess
import time

from conftest import RUSTFS, Cluster, counter, drop_caches, files_equal, flip_slot_bytes, random_file

MiB = 1 << 20


def repair_status(cluster):
    r = subprocess.run([RUSTFS, "repair", "status", "--dir", cluster.dir], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_writes_go_on_with_one_dss_down_and_stop_below_min_write_shards(tmp_root, tmp_path):
    c = Cluster(tmp_root)  # RS 4+2 on 6 DSS; min_write_shards defaults to K+1 = 5
    try:
        before = tmp_path / "before.bin"
        random_file(before, 9 * MiB + 123, seed=21)
        shutil.copyfile(before, c.path("before.bin"))
        c.kill("dss-1")
        # A new file, and an overwrite in the middle of one written before
        # (its chunks' shard on DSS 1 must move or be left for repair).
        new = tmp_path / "new.bin"
        random_file(new, 8 * MiB + 77, seed=22)
        r = subprocess.run(["cp", str(new), c.path("new.bin")], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        patch = os.urandom(300 * 1024)
        with open(before, "r+b") as f:
            f.seek(5 * MiB + 4000)
            f.write(patch)
        with open(c.path("before.bin"), "r+b") as f:
            f.seek(5 * MiB + 4000)
            f.write(patch)
            f.flush()
            os.fsync(f.fileno())
        drop_caches()
        assert files_equal(new, c.path("new.bin"))
        assert files_equal(before, c.path("before.bin"))
        s = c.stats()
        assert counter(s, "mds", "mds.degraded_commits") > 0
        assert counter(s, "client", "client.degraded_writes") > 0
        assert "degraded writes published" in repair_status(c)
        # Two down leaves 4 servers < 5: a write fails with an error, never
        # silently, and what was written before still reads back.
        c.kill("dss-4")
        r = subprocess.run(["cp", str(new), c.path("refused.bin")], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode != 0
        drop_caches()
        assert files_equal(new, c.path("new.bin"))
        assert files_equal(before, c.path("before.bin"))
    finally:
        c.down()


def test_min_write_shards_k_writes_with_m_down(tmp_root, tmp_path):
    c = Cluster(tmp_root, config_edits=[("min_write_shards = 0", "min_write_shards = 4")])
    try:
        c.kill("dss-0")
        c.kill("dss-3")
        src = tmp_path / "src.bin"
        random_file(src, 6 * MiB + 5, seed=23)
        shutil.copyfile(src, c.path("f.bin"))
        drop_caches()
        assert files_equal(src, c.path("f.bin"))
    finally:
        c.down()


def wait_repaired(cluster, timeout_s, gone=0):
    """Until the MDS counts `gone` DSS gone past the grace period and its
    repair queue is empty after having repaired chunks."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        s = cluster.stats()
        if (counter(s, "mds", "mds.dss_gone") == gone and counter(s, "mds", "mds.repair_chunks") > 0
                and counter(s, "mds", "mds.repair_queued_chunks") == 0):
            return s
        time.sleep(0.5)
    raise AssertionError("repair did not finish:\n" + repair_status(cluster) + cluster.log("mds")[-3000:])


def test_repair_makes_further_failures_survivable(tmp_root, tmp_path):
    # RS 2+2 on 6 DSS: kill 2, repair onto the 4 left, kill 2 others: the
    # last 2 servers hold K shards of every chunk, byte-exact.
    c = Cluster(tmp_root, k=2, m=2, config_edits=[
        ("grace_ms = 600000", "grace_ms = 2000"),
        ("heartbeat_timeout_ms = 5000", "heartbeat_timeout_ms = 1500"),
        ("max_bytes_per_s = \"64MiB\"", "max_bytes_per_s = \"256MiB\"")])
    try:
        files = []
        for i in range(3):
            src = tmp_path / f"f{i}.bin"
            random_file(src, (3 + 4 * i) * MiB + 1000 * i, seed=30 + i)
            shutil.copyfile(src, c.path(f"f{i}.bin"))
            files.append(src)
        c.kill("dss-1")
        c.kill("dss-2")
        s = wait_repaired(c, 90, gone=2)
        assert counter(s, "mds", "mds.repair_bytes_written") > 0
        out = repair_status(c)
        assert "degraded chunks queued for repair: 0" in out, out
        c.kill("dss-0")
        c.kill("dss-5")
        drop_caches()
        for i, src in enumerate(files):
            assert files_equal(src, c.path(f"f{i}.bin")), f"f{i}.bin"
    finally:
        c.down()


def test_degraded_write_is_repaired_when_the_server_returns(tmp_root, tmp_path):
    # Written while a DSS is down (that position stored nowhere), the chunk
    # is rebuilt once a server can take it; then M = 2 failures are
    # survivable for it again.
    c = Cluster(tmp_root, config_edits=[("heartbeat_timeout_ms = 5000", "heartbeat_timeout_ms = 1500")])
    try:
        c.kill("dss-2")
        time.sleep(2)  # the MDS sees it gone: placement leaves its position empty
        src = tmp_path / "d.bin"
        random_file(src, 8 * MiB, seed=40)
        shutil.copyfile(src, c.path("d.bin"))
        assert counter(c.stats(), "mds", "mds.degraded_commits") > 0
        c.up()  # DSS 2 back (empty of this file's shards)
        wait_repaired(c, 60)
        c.kill("dss-0")
        c.kill("dss-1")
        drop_caches()
        assert files_equal(src, c.path("d.bin"))
    finally:
        c.down()


def test_overwrite_moves_shards_off_a_down_server(tmp_root, tmp_path):
    # RS 2+2 on 6 DSS: with DSS 1 down (not yet past the repair grace), an
    # overwrite of a chunk with a shard there places that shard on a spare
    # server, written whole (rebuilt from the old version around the
    # write); a further M = 2 failures then still read byte-exact.
    c = Cluster(tmp_root, k=2, m=2,
                config_edits=[("heartbeat_timeout_ms = 5000", "heartbeat_timeout_ms = 1500")])
    try:
        src = tmp_path / "m.bin"
        random_file(src, 24 * MiB, seed=50)
        shutil.copyfile(src, c.path("m.bin"))
        c.kill("dss-1")
        time.sleep(2.5)  # the MDS sees it down: it is not writable any more
        rnd = os.urandom(64 * 1024)
        with open(src, "r+b") as local, open(c.path("m.bin"), "r+b") as remote:
            for off in range(100 * 1024, 24 * MiB, 4 * MiB):  # one patch per chunk
                for f in (local, remote):
                    f.seek(off)
                    f.write(rnd)
            remote.flush()
            os.fsync(remote.fileno())
        s = c.stats()
        assert counter(s, "mds", "mds.degraded_commits") == 0  # moved, not degraded
        drop_caches()
        assert files_equal(src, c.path("m.bin"))
        c.kill("dss-0")
        c.kill("dss-4")
        drop_caches()
        assert files_equal(src, c.path("m.bin"))
    finally:
        c.down()


def test_scrub_finds_corrupt_shards_and_repair_rewrites_them(tmp_root, tmp_path):
    c = Cluster(tmp_root, config_edits=[("scrub_interval_s = 604800", "scrub_interval_s = 1")])
    try:
        src = tmp_path / "s.bin"
        random_file(src, 8 * MiB, seed=60)
        shutil.copyfile(src, c.path("s.bin"))
        assert flip_slot_bytes(c, 0) > 0  # nobody reads the file: only scrub can notice
        deadline = time.time() + 90
        while True:
            s = c.stats()
            if (counter(s, "mds", "mds.scrub_bad_shards") > 0 and counter(s, "mds", "mds.repair_chunks") > 0
                    and counter(s, "mds", "mds.repair_queued_chunks") == 0):
                break
            assert time.time() < deadline, repair_status(c) + c.log("mds")[-3000:]
            time.sleep(0.5)
        # DSS 0's shards were rewritten: with two other servers gone, reads
        # need them, and they are right.
        c.kill("dss-1")
        c.kill("dss-2")
        drop_caches()
        assert files_equal(src, c.path("s.bin"))
    finally:
        c.down()
