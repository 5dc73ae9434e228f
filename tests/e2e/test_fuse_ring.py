"""FUSE over io_uring (src/fuse/uring_channel.*, `[fuse] io_uring`): the rings
carry the mount's requests when the kernel offers them, give the same bytes
as the source through writes and verified reads at depth, and the keys act:
io_uring = false keeps /dev/fuse, ring_depth sizes the rings. (Every other
e2e test and pjdfstest also run over the rings when the kernel offers them:
it is the default.)"""
import os
import subprocess

import pytest

from conftest import Cluster, counter, random_file

MiB = 1 << 20
NO_FRAGMENT_CACHE = ("[fragment_cache]\nenabled = true", "[fragment_cache]\nenabled = false")
PARAM = "/sys/module/fuse/parameters/enable_uring"


def ring_offered():
    try:
        with open(PARAM) as f:
            return f.read().strip() in ("Y", "1")
    except OSError:
        return False


needs_ring = pytest.mark.skipif(
    not ring_offered(),
    reason=f"kernel without FUSE over io_uring, or {PARAM} off (scripts/install-deps.sh turns it on)")


def ring_replies(c):
    return counter(c.stats(), "client", "fuse.ring_replies")


def fio(args, cwd):
    r = subprocess.run(["fio", "--output-format=normal"] + args, capture_output=True, text=True,
                       timeout=300, cwd=cwd)
    assert r.returncode == 0 and "err= 0" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


def write_then_verify(c, name):
    """Random writes at depth 16, O_DIRECT, then their verification by 4
    readers: every block's checksum and header (offset, job) checked by fio."""
    p = c.path(name)
    common = [f"--filename={p}", "--bs=4k", "--size=16m", "--verify=crc32c", "--verify_fatal=1"]
    fio(["--name=w", "--rw=randwrite", "--direct=1", "--ioengine=libaio", "--iodepth=16",
         "--do_verify=0"] + common, c.dir)
    fio(["--name=v", "--rw=randwrite", "--verify_only", "--ioengine=libaio", "--iodepth=16",
         "--direct=1", "--numjobs=4"] + common, c.dir)


@needs_ring
def test_ring_carries_requests_and_bytes_match(tmp_root):
    c = Cluster(tmp_root)
    try:
        assert "FUSE over io_uring: " in c.log("fuse")
        before = ring_replies(c)
        write_then_verify(c, "verified.bin")
        # A file copied in and read back whole, byte for byte.
        src = os.path.join(tmp_root, "src.bin")
        random_file(src, 9 * MiB + 123, seed=7)
        subprocess.run(["cp", src, c.path("copy.bin")], check=True)
        subprocess.run(["sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"], check=True)
        with open(src, "rb") as a, open(c.path("copy.bin"), "rb") as b:
            assert a.read() == b.read()
        # 4,096 writes and 4 x 4,096 reads of 4 KiB went through the rings
        # (plus the copy's and the metadata's requests).
        assert ring_replies(c) - before >= 5 * 4096
    finally:
        c.down()


def test_io_uring_false_keeps_dev_fuse(tmp_root):
    c = Cluster(tmp_root, config_edits=[("io_uring = true", "io_uring = false")])
    try:
        write_then_verify(c, "verified.bin")
        assert ring_replies(c) == 0
        assert "FUSE over io_uring" not in c.log("fuse")
    finally:
        c.down()


@needs_ring
def test_ring_depth_sizes_the_rings(tmp_root):
    c = Cluster(tmp_root, config_edits=[("ring_depth = 128", "ring_depth = 2")])
    try:
        assert "x 2 entries" in c.log("fuse")
        # 16 requests in flight from 4 jobs through 2 entries per CPU: they
        # wait their turn in the kernel, and all are answered.
        write_then_verify(c, "verified.bin")
        assert ring_replies(c) > 0
    finally:
        c.down()


@needs_ring
def test_reads_arriving_during_a_batch_start_while_it_waits(tmp_root):
    """Four buffered psync readers on one CPU share that CPU's ring queue:
    while its thread waits for one read's shards, the others' reads reach
    the ring and are started then (the wait hook, net/wait_hook.h), not after
    it. Every block is checked by fio against what it wrote (crc32c and
    header), with the client's cache off so each read goes to the DSS."""
    c = Cluster(tmp_root, config_edits=[NO_FRAGMENT_CACHE])
    try:
        p = c.path("verified.bin")
        common = [f"--filename={p}", "--bs=4k", "--verify=crc32c", "--verify_fatal=1"]
        fio(["--name=w", "--rw=randwrite", "--direct=1", "--ioengine=libaio", "--iodepth=16",
             "--size=16m", "--do_verify=0"] + common, c.dir)
        subprocess.run(["sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"], check=True)
        before = counter(c.stats(), "client", "fuse.reads_served_while_waiting")
        # Each reader checks its own quarter (no two wait on one page).
        fio(["--name=v", "--rw=randwrite", "--verify_only", "--ioengine=psync", "--numjobs=4",
             "--size=4m", "--offset_increment=4m", "--cpus_allowed=0"] + common, c.dir)
        assert counter(c.stats(), "client", "fuse.reads_served_while_waiting") > before
    finally:
        c.down()


def test_reads_of_many_files_in_one_batch_share_each_round_trip(tmp_root):
    """Random 4 KiB reads of 32 files at depth 64: a batch of reads holds
    several files' reads, and they reach the DSS together (Client::ReadFiles:
    one BatchRead per DSS per batch, not one per file, served one after
    another), and with a server down too. Every block is checked by fio
    against what it wrote, with the client's cache off so each read goes to
    the DSS."""
    c = Cluster(tmp_root, config_edits=[NO_FRAGMENT_CACHE])
    try:
        files = 32
        d = c.path("many")
        os.mkdir(d)
        common = [f"--directory={d}", f"--nrfiles={files}", "--filesize=512k", "--filename_format=f$filenum",
                  "--bs=4k", "--verify=crc32c", "--verify_fatal=1", "--file_service_type=random"]
        fio(["--name=w", "--rw=randwrite", "--direct=1", "--ioengine=libaio", "--iodepth=16",
             "--do_verify=0"] + common, c.dir)
        subprocess.run(["sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"], check=True)
        names = ("client.batch_reads", "fuse.read_batches", "fuse.batched_reads")
        before = {n: counter(c.stats(), "client", n) for n in names}
        fio(["--name=v", "--rw=randwrite", "--verify_only", "--ioengine=libaio", "--iodepth=64",
             "--direct=1"] + common, c.dir)
        after = {n: counter(c.stats(), "client", n) for n in names}
        rpcs, batches, reads = (after[n] - before[n] for n in names)
        assert reads >= files * 128  # every block of every file was read back
        assert reads >= 2 * batches, (reads, batches)  # batches hold several reads
        # At most one BatchRead per DSS (6) per batch, and one lone read of
        # a file whose map had to be fetched. One per file per batch would be
        # more: a batch of n reads of 32 files names ~n(1 - n/64) of them.
        assert rpcs <= 6 * batches + files, (rpcs, batches, reads)
        # With a server gone, the batches' reads of every file it held are
        # rebuilt from the others, all files' together (each by its own
        # geometry): the same bytes.
        c.kill("dss-2")
        subprocess.run(["sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"], check=True)
        degraded = counter(c.stats(), "client", "client.degraded_read_bytes")
        names = ("client.rpcs_sent", "fuse.read_batches")
        before = {n: counter(c.stats(), "client", n) for n in names}
        fio(["--name=v", "--rw=randwrite", "--verify_only", "--ioengine=libaio", "--iodepth=64",
             "--direct=1"] + common, c.dir)
        assert counter(c.stats(), "client", "client.degraded_read_bytes") > degraded
        rpcs, batches = (counter(c.stats(), "client", n) - before[n] for n in names)
        # The pieces the dead server held, of every file in a batch, are
        # rebuilt together: per batch one request to each server (6, the
        # dead one until it is marked down) and one BatchRead per live
        # server for the sources (5), plus a first lone read per file. File
        # by file, each lone piece read K shards of its own: 2,635 requests
        # over 95 batches.
        assert rpcs <= 11 * batches + files, (rpcs, batches)
    finally:
        c.down()
