"""Failures: a DSS killed, a shard corrupted, the MDS killed and restarted, a
full disk, malformed RPC frames. Never wrong bytes, nothing lost."""
import os
import shutil
import socket
import struct
import subprocess
import time

import pytest

from conftest import Cluster, counter, drop_caches, files_equal, flip_slot_bytes, random_file, recv_exact

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
    flipped = flip_slot_bytes(cluster, 0)
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


def test_full_dss_takes_no_new_shards_and_a_full_cluster_says_enospc(tmp_root, tmp_path):
    small = []

    def tiny_disks(c):
        for i in (3, 4):
            d = os.path.join(c.dir, f"dss-{i}")
            os.makedirs(d, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", d], check=True)
            small.append(d)

    c = Cluster(tmp_root, before_start=tiny_disks)
    try:
        src = tmp_path / "old.bin"
        random_file(src, 8 * MiB, seed=7)
        shutil.copyfile(src, c.path("keep.bin"))
        # DSS 3 and 4 fill up: each then takes no new shards, and with two
        # of six full, RS 4+2 has fewer servers with room than
        # layout.min_write_shards (5): writes fail with ENOSPC, not EIO.
        with pytest.raises(OSError) as e:
            with open(c.path("filler.bin"), "wb") as f:
                for _ in range(300):
                    f.write(os.urandom(MiB))
                    f.flush()
        assert e.value.errno == 28, e.value
        # Overwriting a published chunk fails with ENOSPC too...
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


def _still_serves(cluster, name, data):
    """The cluster still writes and reads a file through the mount."""
    with open(cluster.path(name), "wb") as f:
        f.write(data)
    drop_caches()
    with open(cluster.path(name), "rb") as f:
        assert f.read() == data


def _closed_by_server(sock):
    """True when the server closes `sock` (EOF, or a reset because our
    unread bytes were still queued) without sending anything more."""
    sock.settimeout(10)
    try:
        return sock.recv(100) == b""
    except ConnectionResetError:
        return True


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
        s = cluster.connect((host, port))
        s.sendall(frame)
        assert _closed_by_server(s), frame
        s.close()
    # The server keeps serving: stats and file reads still work.
    st = cluster.stats()
    assert counter(st, "dss-1", "dss.bad_frames") >= len(bad_frames)
    _still_serves(cluster, "ok", b"x" * 100000)


def _varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _field(num, v):
    """A protobuf field: varint for ints, length-delimited for bytes."""
    if isinstance(v, int):
        return _varint(num << 3) + _varint(v)
    return _varint((num << 3) | 2) + _varint(len(v)) + v


def _rpc(method, body, payload=b""):
    hdr = _field(1, 7) + _field(2, method) + _field(5, body)
    return struct.pack("<IIQ", 0x31534652, len(hdr), len(payload)) + hdr + payload


def _reply_code(sock, first=True):
    """The status code of the next reply frame on `sock` (0 = OK); the
    first reply on a connection comes after the server's 32-byte proof."""
    if first:
        recv_exact(sock, 32)
    magic, hlen, plen = struct.unpack("<IIQ", recv_exact(sock, 16))
    assert magic == 0x31534652
    hdr = recv_exact(sock, hlen)
    recv_exact(sock, plen)
    i = 0

    def varint():
        nonlocal i
        v = shift = 0
        while True:
            b = hdr[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v
    while i < len(hdr):  # find field 3 (code), a varint
        key = varint()
        num, wt = key >> 3, key & 7
        if wt == 0:
            v = varint()
            if num == 3:
                return v
        elif wt == 1:  # fixed64
            i += 8
        elif wt == 5:  # fixed32
            i += 4
        else:  # length-delimited: the length is a varint too
            ln = varint()
            i += ln
    return 0


M_READ_SHARD, M_BATCH_READ, M_WRITE_SHARD = 41, 43, 40


def test_absurd_shard_ranges_are_refused_and_the_dss_keeps_serving(cluster):
    host, port = cluster.dss_addr(2)
    key = _field(1, 2) + _field(2, 0) + _field(3, 1) + _field(4, 0)
    near_end = (1 << 64) - 4096
    requests = [
        # A read whose end wraps past 2^64 (used to spin a DSS thread).
        (M_READ_SHARD, _field(1, key) + _field(2, near_end) + _field(3, 8192), b""),
        (M_BATCH_READ, _field(1, _field(1, key) + _field(2, near_end) + _field(3, 4096)), b""),
        # A shard bigger than any chunk, and an empty write far into it
        # (used to allocate and write gigabytes of zeros).
        (M_WRITE_SHARD, _field(1, key) + _field(3, 60 << 30) + _field(4, 64 << 30), b""),
        (M_WRITE_SHARD, _field(1, key) + _field(3, 1 << 30) + _field(4, 1 << 30), b""),
    ]
    for method, body, payload in requests:
        s = cluster.connect((host, port))
        s.sendall(_rpc(method, body, payload))
        assert _reply_code(s) == 1, method  # kInvalidArgument, promptly
        s.close()
    _still_serves(cluster, "still", b"y" * 200000)


def _rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_frames_claiming_huge_sizes_do_not_make_the_server_allocate(cluster):
    # 40 connections each announce a 16 MiB header and a 64 MiB payload and
    # send nothing more: buffers grow only as bytes arrive, so the DSS does
    # not hold 40 x 80 MiB (it did: 3 GiB resident).
    host, port = cluster.dss_addr(0)
    pid = cluster.pid("dss-0")
    before = _rss_kib(pid)
    socks = []
    try:
        for _ in range(40):
            s = cluster.connect((host, port))
            s.sendall(struct.pack("<IIQ", 0x31534652, 16 << 20, 64 << 20) + b"\x08")
            socks.append(s)
        time.sleep(1)
        grown_mib = (_rss_kib(pid) - before) / 1024
        assert grown_mib < 256, f"DSS grew {grown_mib:.0f} MiB for frames that never came"
        _still_serves(cluster, "alive", b"z" * 50000)
    finally:
        for s in socks:
            s.close()


PRELOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "src",
                       "librustfs_preload.so")


def test_willneed_on_a_huge_file_does_not_hurt_the_mount(cluster):
    # WILLNEED of a whole 1 TiB file (length 0: to the end) reaches the
    # daemon through the preload shim; prefetch is bounded by its budget and
    # read in pieces (it used to allocate the whole range and die).
    p = cluster.path("huge.sparse")
    with open(p, "wb") as f:
        f.truncate(1 << 40)
        f.seek(12345)
        f.write(b"data")
    code = ("import os,sys,time\n"
            "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
            "os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)\n"
            "os.posix_fadvise(fd, 1 << 39, 1 << 39, os.POSIX_FADV_WILLNEED)\n"
            "time.sleep(1)\n"
            "assert os.pread(fd, 4, 12345) == b'data'\n")
    r = subprocess.run(["/usr/bin/python3", "-c", code, p], env=dict(os.environ, LD_PRELOAD=PRELOAD),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    os.kill(cluster.pid("fuse"), 0)  # the daemon is alive
    s = cluster.stats()
    assert counter(s, "client", "client.hints_received") >= 2
    with open(p, "rb") as f:
        f.seek(12345)
        assert f.read(4) == b"data"


def test_peers_without_the_cluster_key_are_refused(cluster):
    # A peer whose hello is made with another key, is replayed, or is not a
    # hello at all (a request sent straight away) is disconnected before any
    # request is served, and counted; the servers listen on loopback only.
    targets = [cluster.dss_addr(0), ("127.0.0.1", cluster.port)]  # a DSS and the MDS
    stats_req = _rpc(60, b"", b"x" * 100)  # M_STATS, longer than a hello
    for addr in targets:
        good, proof = cluster.hello()
        s = cluster.connect(addr, key=False)
        s.sendall(good + stats_req)
        assert recv_exact(s, 32) == proof  # the server holds the key too
        assert _reply_code(s, first=False) == 0
        s.close()
        for hello in [cluster.hello(key=b"k" * 64)[0],  # another cluster's key
                      good,                              # a replay of a hello already used
                      b""]:                              # no hello
            s = cluster.connect(addr, key=False)
            s.sendall(hello + stats_req)
            assert _closed_by_server(s), hello[:8]
            s.close()
    st = cluster.stats()
    assert counter(st, "dss-0", "dss.auth_refused") >= 3
    assert counter(st, "mds", "mds.auth_refused") >= 3
    key = os.path.join(cluster.dir, "cluster.key")
    assert os.stat(key).st_mode & 0o777 == 0o600
    with open(os.path.join(cluster.dir, "rustfs.toml")) as f:
        text = f.read()
    assert f'key_file = "{key}"' in text
    assert "0.0.0.0" not in text
