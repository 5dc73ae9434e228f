"""Failures: a DSS killed, a shard corrupted, the MDS killed and restarted, a
full disk, malformed RPC frames. Never wrong bytes, nothing lost."""
import os
import shutil
import socket
import struct
import subprocess

import pytest

from conftest import Cluster, counter, drop_caches, files_equal, random_file

MiB = 1 << 20


def fio_verify(path, size, rw, extra=()):
    cmd = ["fio", "--name=v", f"--filename={path}", f"--size={size}", f"--rw={rw}", "--bs=4k",
           "--verify=crc32c", "--verify_fatal=1", "--ioengine=psync", "--randrepeat=1"] + list(extra)
    # cwd: fio leaves its verify state file in the working directory.
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=os.path.dirname(path))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "verify" not in r.stderr.lower() or "bad" not in r.stderr.lower(), r.stderr


def test_fio_randread_verifies_on_mount(cluster):
    p = cluster.path("fio.bin")
    fio_verify(p, "32m", "write", ["--do_verify=0"])
    drop_caches()
    fio_verify(p, "32m", "randread", ["--direct=1", "--number_ios=4000"])


def test_reads_survive_a_killed_dss(cluster, tmp_path):
    src = tmp_path / "src.bin"
    random_file(src, 40 * MiB + 999, seed=5)
    shutil.copyfile(src, cluster.path("f.bin"))
    fio_verify(cluster.path("fio.bin"), "16m", "write", ["--do_verify=0"])
    before = cluster.stats()
    cluster.kill("dss-2")
    drop_caches()
    assert files_equal(src, cluster.path("f.bin"))
    fio_verify(cluster.path("fio.bin"), "16m", "randread", ["--direct=1", "--number_ios=2000"])
    after = cluster.stats()
    assert counter(after, "client", "client.reconstructions") > counter(before, "client",
                                                                       "client.reconstructions")
    # A second DSS down is still within M = 2.
    cluster.kill("dss-5")
    drop_caches()
    assert files_equal(src, cluster.path("f.bin"))
    cluster.up()  # restarts the killed servers
    drop_caches()
    assert files_equal(src, cluster.path("f.bin"))


def test_corrupt_shard_is_detected_repaired_and_reported(cluster, tmp_path):
    src = tmp_path / "src.bin"
    random_file(src, 8 * MiB, seed=6)
    shutil.copyfile(src, cluster.path("c.bin"))
    # Flip one byte in the second 4 KiB block of every slot of DSS 0's data
    # files ("<n>-<slot bytes>x<slots>.dat"): whichever slots hold shards.
    slots_dir = os.path.join(cluster.dir, "dss-0", "slots")
    flipped = 0
    for name in os.listdir(slots_dir):
        slot_bytes, slots = (int(x) for x in name.split("-")[1].split(".")[0].split("x"))
        with open(os.path.join(slots_dir, name), "r+b") as f:
            for slot in range(slots):
                f.seek(slot * slot_bytes + 4096 + 1234)
                b = f.read(1)
                f.seek(slot * slot_bytes + 4096 + 1234)
                f.write(bytes([b[0] ^ 0x5A]))
                flipped += 1
    assert flipped > 0
    before = cluster.stats()
    drop_caches()
    assert files_equal(src, cluster.path("c.bin"))
    after = cluster.stats()
    assert counter(after, "dss-0", "dss.checksum_failures") > counter(before, "dss-0",
                                                                     "dss.checksum_failures")
    assert counter(after, "client", "client.corrupt_shards_reported") > 0
    assert counter(after, "mds", "mds.bad_shards_reported") > 0


def test_mds_sigkill_and_restart_keeps_every_file(cluster, tmp_path):
    files = {}
    os.makedirs(cluster.path("d1", "d2"))
    for i in range(12):
        src = tmp_path / f"s{i}"
        random_file(src, (i * 777777) % (9 * MiB) + 1, seed=100 + i)
        dst = cluster.path("d1", "d2", f"f{i}") if i % 2 else cluster.path(f"f{i}")
        shutil.copyfile(src, dst)
        files[dst] = src
    os.rename(cluster.path("f0"), cluster.path("d1", "renamed"))
    files[cluster.path("d1", "renamed")] = files.pop(cluster.path("f0"))
    cluster.kill("mds")
    cluster.up()
    drop_caches()
    for dst, src in files.items():
        assert files_equal(src, dst), dst
    assert sorted(os.listdir(cluster.path("d1", "d2"))) == sorted(f"f{i}" for i in range(1, 12, 2))
    # And the restarted MDS takes new writes.
    with open(cluster.path("after"), "wb") as f:
        f.write(b"still writable")
    drop_caches()
    with open(cluster.path("after"), "rb") as f:
        assert f.read() == b"still writable"


def test_enospc_fails_the_write_and_keeps_old_contents(tmp_root, tmp_path):
    small = []

    def tiny_disk_for_dss3(c):
        d = os.path.join(c.dir, "dss-3")
        os.makedirs(d, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", d], check=True)
        small.append(d)

    c = Cluster(tmp_root, before_start=tiny_disk_for_dss3)
    try:
        src = tmp_path / "old.bin"
        random_file(src, 8 * MiB, seed=7)
        shutil.copyfile(src, c.path("keep.bin"))
        # Fill DSS 3 (every chunk has a shard there: 6 DSS, RS 4+2).
        with pytest.raises(OSError) as e:
            with open(c.path("filler.bin"), "wb") as f:
                for _ in range(200):
                    f.write(os.urandom(MiB))
        assert e.value.errno == 28, e.value
        # Overwriting a published chunk now fails with ENOSPC too...
        with pytest.raises(OSError) as e:
            with open(c.path("keep.bin"), "r+b") as f:
                f.write(b"N" * (4 * MiB))
                os.fsync(f.fileno())
        assert e.value.errno == 28, e.value
        # ...and leaves the old contents readable, byte for byte.
        drop_caches()
        assert files_equal(src, c.path("keep.bin"))
    finally:
        c.down()
        for d in small:
            subprocess.run(["umount", "-l", d])


def test_malformed_frames_close_only_that_connection(cluster):
    host, port = cluster.dss_addr(1)
    # Garbage, a valid magic with an absurd header length, and a payload
    # length past the limit: each connection is closed by the server.
    bad_frames = [
        b"GET / HTTP/1.0\r\n\r\n",
        struct.pack("<IIQ", 0x31534652, 0xFFFFFFFF, 0),
        struct.pack("<IIQ", 0x31534652, 10, 1 << 40),
        struct.pack("<IIQ", 0x31534652, 5, 0) + b"\xff\xff\xff\xff\xff",  # unparsable header
    ]
    for frame in bad_frames:
        s = socket.create_connection((host, port), timeout=5)
        s.sendall(frame)
        try:
            got = s.recv(100)  # EOF: closed by the server
        except ConnectionResetError:
            got = b""  # closed with our unread bytes still queued: also closed
        assert got == b"", frame
        s.close()
    # The server keeps serving: stats and file reads still work.
    st = cluster.stats()
    assert counter(st, "dss-1", "dss.bad_frames") >= len(bad_frames)
    with open(cluster.path("ok"), "wb") as f:
        f.write(b"x" * 100000)
    drop_caches()
    with open(cluster.path("ok"), "rb") as f:
        assert f.read() == b"x" * 100000
