"""Layout and metadata leases across two client processes (two FUSE mounts
of one cluster): a change by one revokes the other's leases before it
completes, so the other never reads stale sizes or bytes."""
import errno
import mmap
import os
import signal
import time

import pytest

from conftest import Cluster, counter, drop_caches

MiB = 1 << 20


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


def test_overwrite_truncate_extend_seen_by_other_client(two_clients):
    c, b = two_clients
    a_path, b_path = c.path("shared.bin"), b.path("shared.bin")
    v1 = os.urandom(6 * MiB)
    with open(a_path, "wb") as f:
        f.write(v1)
    fd = os.open(a_path, os.O_RDONLY)  # A keeps the file open: map + lease held
    try:
        assert os.pread(fd, 4096, 5 * MiB) == v1[5 * MiB:5 * MiB + 4096]
        assert os.fstat(fd).st_size == len(v1)
        # B overwrites a range in the middle of a stripe.
        patch = os.urandom(10000)
        with open(b_path, "r+b") as f:
            f.seek(5 * MiB + 100)
            f.write(patch)
        v2 = bytearray(v1)
        v2[5 * MiB + 100:5 * MiB + 100 + len(patch)] = patch
        assert os.pread(fd, 20000, 5 * MiB) == bytes(v2[5 * MiB:5 * MiB + 20000])
        # B truncates: A sees the new size and no bytes past it.
        os.truncate(b_path, 3 * MiB + 5)
        assert os.fstat(fd).st_size == 3 * MiB + 5
        assert os.pread(fd, 100, 3 * MiB) == bytes(v2[3 * MiB:3 * MiB + 5])
        # B extends it again: the cut-off range reads as zeros on A.
        with open(b_path, "r+b") as f:
            f.seek(7 * MiB)
            f.write(b"end")
        assert os.fstat(fd).st_size == 7 * MiB + 3
        assert os.pread(fd, 8, 7 * MiB - 5) == bytes(5) + b"end"
        assert os.pread(fd, 4096, 4 * MiB) == bytes(4096)
    finally:
        os.close(fd)
    st = b.stats()
    assert counter(c.stats(), "mds", "mds.lease_revocations") > 0
    assert counter(c.stats(), "client", "client.leases_revoked") > 0
    del st


def test_namespace_changes_seen_by_other_client(two_clients):
    c, b = two_clients
    os.mkdir(c.path("d"))
    with open(c.path("d", "f"), "w") as f:
        f.write("one")
    assert os.listdir(b.path("d")) == ["f"]
    assert os.stat(b.path("d", "f")).st_size == 3
    # A renames and rewrites; B's cached entries and attributes are revoked.
    os.rename(c.path("d", "f"), c.path("d", "g"))
    assert not os.path.exists(b.path("d", "f"))
    with open(c.path("d", "g"), "w") as f:
        f.write("twotwo")
    assert os.stat(b.path("d", "g")).st_size == 6
    assert read_all(b.path("d", "g")) == b"twotwo"
    os.chmod(c.path("d", "g"), 0o600)
    assert os.stat(b.path("d", "g")).st_mode & 0o777 == 0o600
    os.unlink(c.path("d", "g"))
    assert not os.path.exists(b.path("d", "g"))


def test_reads_and_stats_make_no_mds_rpcs_under_lease(two_clients):
    c, b = two_clients
    with open(c.path("ro.bin"), "wb") as f:
        f.write(os.urandom(8 * MiB))
    names = [f"m{i}" for i in range(50)]
    for n in names:
        open(c.path(n), "w").close()
    fd = os.open(c.path("ro.bin"), os.O_RDONLY)
    try:
        os.pread(fd, 4096, 0)
        for n in names:
            os.stat(c.path(n))
        before = c.stats()
        for i in range(2000):
            os.pread(fd, 4096, (i * 7919 * 4096) % (8 * MiB - 4096))
        for n in names:  # the kernel's own caches may expire; ours answer
            os.stat(c.path(n))
        after = c.stats()
    finally:
        os.close(fd)
    assert counter(after, "client", "client.mds_rpcs") - counter(before, "client", "client.mds_rpcs") <= 2
    assert counter(after, "client", "client.app_reads") - counter(before, "client", "client.app_reads") >= 2000


def test_client_stops_trusting_its_map_when_the_lease_lapses(tmp_root):
    c = Cluster(tmp_root, lease_ms=2000)
    try:
        p = c.path("lease.bin")
        data = os.urandom(4 * MiB)
        with open(p, "wb") as f:
            f.write(data)
        fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, 4096)
        try:
            os.preadv(fd, [buf], 0)
            assert bytes(buf) == data[:4096]
            os.kill(c.pid("mds"), signal.SIGSTOP)  # no renewals from now on
            try:
                time.sleep(2.5)  # past the lease
                with pytest.raises(OSError) as e:
                    os.preadv(fd, [buf], 8192)
                assert e.value.errno == errno.EIO
            finally:
                os.kill(c.pid("mds"), signal.SIGCONT)
            # Back in touch: the map is fetched again and reads work.
            deadline = time.time() + 20
            while True:
                try:
                    os.preadv(fd, [buf], 8192)
                    break
                except OSError:
                    assert time.time() < deadline
                    time.sleep(0.2)
            assert bytes(buf) == data[8192:12288]
        finally:
            os.close(fd)
    finally:
        c.down()


def test_a_client_that_unmounts_hands_its_leases_back(two_clients):
    c, b = two_clients
    os.mkdir(c.path("gone"))
    assert os.listdir(b.path("gone")) == []  # B now holds leases on the directory
    b.close()  # unmount: B ends its session
    before = c.stats()
    with open(c.path("gone", "new"), "w") as f:  # revokes nobody, waits for nobody
        f.write("x")
    after = c.stats()
    assert counter(after, "mds", "mds.lease_revocations_waited_out") == counter(
        before, "mds", "mds.lease_revocations_waited_out")
    assert counter(after, "mds", "mds.lease_revocations") == counter(before, "mds", "mds.lease_revocations")
