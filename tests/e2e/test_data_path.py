"""Data written through the mount reads back byte-exact, compared with the
source file (cmp) or a local reference copy."""
import os
import random
import shutil
import subprocess

from conftest import counter, drop_caches, files_equal, random_file

MiB = 1 << 20


def test_copy_200mib_file_reads_back_equal(shared_cluster, tmp_path):
    src = tmp_path / "src.bin"
    random_file(src, 200 * MiB + 12345, seed=1)  # not a multiple of anything
    shutil.copyfile(src, shared_cluster.path("big.bin"))
    drop_caches()
    assert os.path.getsize(shared_cluster.path("big.bin")) == os.path.getsize(src)
    assert files_equal(src, shared_cluster.path("big.bin"))


def test_random_overwrites_match_local_copy(shared_cluster, tmp_path):
    ref_path = tmp_path / "ref.bin"
    random_file(ref_path, 24 * MiB, seed=2)
    shutil.copyfile(ref_path, shared_cluster.path("ow.bin"))
    ref = bytearray(ref_path.read_bytes())
    rnd = random.Random(3)
    fd = os.open(shared_cluster.path("ow.bin"), os.O_RDWR)
    try:
        for i in range(300):
            # Small writes inside stripes, writes across stripe, row and chunk
            # boundaries, and writes that extend the file past its end.
            n = rnd.choice([1, 7, 4096, 5000, 65536, 70000, 300000, 4 * MiB + 3])
            off = rnd.randrange(0, len(ref) + MiB)
            data = rnd.randbytes(n)
            os.pwrite(fd, data, off)
            if off > len(ref):
                ref.extend(bytes(off - len(ref)))
            ref[off:off + n] = data
            if i % 50 == 0:  # interleave reads: they must see the writes
                ro = rnd.randrange(0, len(ref))
                assert os.pread(fd, 100000, ro) == bytes(ref[ro:ro + 100000])
    finally:
        os.close(fd)
    ref_path.write_bytes(ref)
    drop_caches()
    assert os.path.getsize(shared_cluster.path("ow.bin")) == len(ref)
    assert files_equal(ref_path, shared_cluster.path("ow.bin"))


def test_truncate_shrink_then_extend_reads_zeros(shared_cluster):
    p = shared_cluster.path("trunc.bin")
    data = os.urandom(9 * MiB)
    with open(p, "wb") as f:
        f.write(data)
    os.truncate(p, 5 * MiB + 777)  # inside chunk 1, mid-stripe
    assert os.path.getsize(p) == 5 * MiB + 777
    os.truncate(p, 9 * MiB)
    drop_caches()
    with open(p, "rb") as f:
        got = f.read()
    assert got[:5 * MiB + 777] == data[:5 * MiB + 777]
    assert got[5 * MiB + 777:] == bytes(9 * MiB - (5 * MiB + 777))
    with open(p, "r+b") as f:  # O_TRUNC through open()
        pass
    with open(p, "wb") as f:
        f.write(b"abc")
    drop_caches()
    with open(p, "rb") as f:
        assert f.read() == b"abc"


def test_sparse_file_holes_read_as_zeros(shared_cluster):
    p = shared_cluster.path("sparse.bin")
    fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.pwrite(fd, b"tail", 13 * MiB)
        os.pwrite(fd, b"mid", 6 * MiB + 100)
    finally:
        os.close(fd)
    drop_caches()
    with open(p, "rb") as f:
        got = f.read()
    want = bytearray(13 * MiB + 4)
    want[13 * MiB:] = b"tail"
    want[6 * MiB + 100:6 * MiB + 103] = b"mid"
    assert got == bytes(want)


def test_read_past_eof_is_short(shared_cluster):
    p = shared_cluster.path("short.bin")
    with open(p, "wb") as f:
        f.write(b"x" * 10000)
    drop_caches()
    fd = os.open(p, os.O_RDONLY)
    try:
        assert os.pread(fd, 4096, 8000) == b"x" * 2000
        assert os.pread(fd, 4096, 10000) == b""
        assert os.pread(fd, 4096, 1 << 30) == b""
    finally:
        os.close(fd)


def fio_randread(path, ios, bs="4k", extra=()):
    cmd = ["fio", "--name=rr", f"--filename={path}", "--rw=randread", f"--bs={bs}", "--direct=1",
           "--ioengine=psync", f"--number_ios={ios}", "--randrepeat=0", "--output-format=terse",
           "--terse-version=3"] + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r


def test_4k_random_reads_have_low_amplification_and_no_mds_rpcs(shared_cluster):
    p = shared_cluster.path("amp.bin")
    random_file(p, 64 * MiB, seed=4)
    drop_caches()
    fd = os.open(p, os.O_RDONLY)  # keep it open so the chunk map stays held
    try:
        before = shared_cluster.stats()
        fio_randread(p, 3000)
        after = shared_cluster.stats()
    finally:
        os.close(fd)

    def d(proc, name):
        return counter(after, proc, name) - counter(before, proc, name)

    app = d("client", "client.app_bytes_read")
    disk = d("dss-total", "dss.disk_bytes_read")
    assert app >= 3000 * 4096
    assert disk <= 1.2 * app, f"amplification {disk / app:.3f}"
    # The disk reads went through the DSS read engine: one 4 KiB op per
    # piece, through io_uring or, a lone read on an idle engine, pread (a few
    # header loads are the buffered rest).
    ops = d("dss-total", "dss.uring_ops") + d("dss-total", "dss.sync_reads")
    assert ops >= 0.8 * disk / 4096, f"{ops} engine ops for {disk} disk bytes"
    # Reads resolve locations from the chunk map fetched at open.
    assert d("mds", "mds.chunk_map_rpcs") <= 4  # fio's own open()s, not per read
    # Healthy cluster: no degraded read except where a slow reply was hedged.
    assert d("client", "client.reconstructions") <= d("client", "client.hedged_reads")


def test_concurrent_readers_through_their_own_descriptors_read_exact_bytes(shared_cluster, tmp_path):
    """Several readers of one file, each through its own descriptor (fio
    jobs, DataLoader workers): the mount serves the reads in flight together
    whichever descriptor they came through (one batch per inode), and every
    reader gets its own bytes."""
    import threading
    src = tmp_path / "src.bin"
    random_file(src, 48 * MiB + 1234, seed=21)
    p = shared_cluster.path("readers.bin")
    shutil.copyfile(src, p)
    ref = src.read_bytes()
    drop_caches()
    errors = []

    def reader(seed):
        rng = random.Random(seed)
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no read-ahead: each read reaches the mount
            for _ in range(1500):
                off = rng.randrange(len(ref) + 100)
                n = rng.choice([1, 4096, 5000, 65536, 131072])
                got = os.pread(fd, n, off)
                if got != ref[off:off + n]:
                    errors.append((seed, off, n, len(got)))
                    return
        finally:
            os.close(fd)

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a reader hung"
    assert not errors, f"wrong bytes (reader, offset, length, got): {errors}"
