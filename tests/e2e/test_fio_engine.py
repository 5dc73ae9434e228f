"""The native path: librustfs.so (include/rustfs/rustfs.h) and the fio engine
over it (librustfs_fio.so), against a real cluster. Bytes written through one
way in (FUSE, native) read back exactly through the other."""
import ctypes
import json
import os
import shutil
import subprocess

import pytest

from conftest import BIN, random_file

MiB = 1 << 20
LIBDIR = os.path.join(os.path.dirname(BIN), "src")  # shared objects sit in the build's src/
LIBRUSTFS = os.path.join(LIBDIR, "librustfs.so")
ENGINE = os.path.join(LIBDIR, "librustfs_fio.so")

needs_engine = pytest.mark.skipif(
    not os.path.exists(ENGINE),
    reason=f"fio engine not built ({ENGINE} missing): scripts/install-deps.sh unpacks fio's "
           "source into third_party/fio-src, then re-run cmake")


def config(cluster):
    return os.path.join(cluster.dir, "rustfs.toml")


class ReadReq(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_uint64), ("length", ctypes.c_size_t),
                ("buf", ctypes.c_void_p), ("result", ctypes.c_ssize_t)]


def load_librustfs():
    lib = ctypes.CDLL(LIBRUSTFS)
    vp = ctypes.c_void_p
    lib.rustfs_connect.argtypes = [ctypes.c_char_p, ctypes.POINTER(vp)]
    lib.rustfs_disconnect.argtypes = [vp]
    lib.rustfs_disconnect.restype = None
    lib.rustfs_open.argtypes = [vp, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(vp)]
    lib.rustfs_close.argtypes = [vp]
    lib.rustfs_size.argtypes = [vp]
    lib.rustfs_size.restype = ctypes.c_int64
    lib.rustfs_pread.argtypes = [vp, vp, ctypes.c_size_t, ctypes.c_uint64]
    lib.rustfs_pread.restype = ctypes.c_ssize_t
    lib.rustfs_read_batch.argtypes = [vp, ctypes.POINTER(ReadReq), ctypes.c_size_t]
    lib.rustfs_last_error.restype = ctypes.c_char_p
    return lib


def test_c_api_from_c(shared_cluster):
    r = subprocess.run([os.path.join(BIN, "capi_probe"), config(shared_cluster)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "capi_probe: ok" in r.stdout, r.stdout + r.stderr


def test_c_api_reads_fuse_written_file_byte_exact(shared_cluster, tmp_path):
    size = 13 * MiB + 4321  # across chunks, ends mid-stripe
    src = tmp_path / "src.bin"
    random_file(src, size, seed=11)
    os.makedirs(shared_cluster.path("sub"), exist_ok=True)
    shutil.copyfile(src, shared_cluster.path("sub", "fuse.bin"))  # written through FUSE
    want = src.read_bytes()

    lib = load_librustfs()
    client, fh = ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.rustfs_connect(config(shared_cluster).encode(), ctypes.byref(client)) == 0, \
        lib.rustfs_last_error()
    try:
        assert lib.rustfs_open(client, b"/sub/fuse.bin", os.O_RDONLY, 0, ctypes.byref(fh)) == 0, \
            lib.rustfs_last_error()
        assert lib.rustfs_size(fh) == size
        # Whole file in uneven pieces with pread...
        got = bytearray()
        piece = ctypes.create_string_buffer(777777)
        while len(got) < size:
            n = lib.rustfs_pread(fh, piece, len(piece), len(got))
            assert n > 0, lib.rustfs_last_error()
            got += piece.raw[:n]
        assert bytes(got) == want
        # ...and scattered reads as one batch, the last one past the end.
        offs = [(i * 2654435761) % size for i in range(200)] + [size - 5, size + 10]
        bufs = [ctypes.create_string_buffer(4096) for _ in offs]
        reqs = (ReadReq * len(offs))(*[ReadReq(o, 4096, ctypes.addressof(b), -1)
                                       for o, b in zip(offs, bufs)])
        assert lib.rustfs_read_batch(fh, reqs, len(offs)) == 0, lib.rustfs_last_error()
        for r, b in zip(reqs, bufs):
            expect = want[r.offset:r.offset + 4096]
            assert r.result == len(expect) and b.raw[:r.result] == expect, r.offset
        assert lib.rustfs_close(fh) == 0
    finally:
        lib.rustfs_disconnect(client)


def fio_engine(cluster, name, extra, timeout=300):
    cmd = ["fio", f"--name={name}", f"--ioengine=external:{ENGINE}",
           f"--rustfs_config={config(cluster)}", "--bs=4k", "--output-format=json"] + extra
    # cwd: fio leaves verify state files (*-verify.state) where it runs.
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cluster.dir)
    assert r.returncode == 0, " ".join(cmd) + "\n" + r.stdout[-3000:] + r.stderr[-3000:]
    job = json.loads(r.stdout)["jobs"][0]
    assert job["error"] == 0, r.stdout[-3000:]
    return job


@needs_engine
def test_fio_randwrite_verify_native_then_verify_on_mount(shared_cluster):
    job = fio_engine(shared_cluster, "w", ["--filename=/fio/verify.bin", "--rw=randwrite",
                                           "--size=24m", "--iodepth=16", "--verify=crc32c",
                                           "--verify_fatal=1"])
    ios = 24 * MiB // 4096
    assert job["write"]["total_ios"] == ios
    assert job["read"]["total_ios"] == ios  # the verify pass, through the engine
    # Published: another client (the FUSE daemon) sees and verifies the same blocks.
    p = shared_cluster.path("fio", "verify.bin")
    assert os.path.getsize(p) == 24 * MiB
    r = subprocess.run(["fio", "--name=w", f"--filename={p}", "--rw=randwrite", "--bs=4k",
                        "--size=24m", "--verify=crc32c", "--verify_only", "--verify_fatal=1",
                        "--ioengine=psync"], capture_output=True, text=True, timeout=300,
                       cwd=shared_cluster.dir)
    assert r.returncode == 0 and "err= 0" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]


@needs_engine
def test_fio_randread_iodepth_32_batches_reads(shared_cluster, tmp_path):
    # The engine lays the file out (fio's own layout would write a local file).
    job = fio_engine(shared_cluster, "r", ["--filename=/fio/read.bin", "--rw=randread",
                                           "--size=64m", "--iodepth=32", "--number_ios=12000"])
    assert job["read"]["total_ios"] == 12000
    assert job["read"]["short_ios"] == 0 and job["read"]["drop_ios"] == 0
    assert os.path.getsize(shared_cluster.path("fio", "read.bin")) == 64 * MiB

    # One submitter taking 32 reads at a time: each batch costs at most one
    # BatchRead per DSS, where one RPC per read would be >= 1 per read.
    stats = tmp_path / "stats.json"
    job = fio_engine(shared_cluster, "rb", ["--filename=/fio/read.bin", "--rw=randread",
                                            "--size=64m", "--iodepth=32", "--iodepth_batch_submit=32",
                                            "--iodepth_batch_complete_min=32", "--number_ios=8000",
                                            "--rustfs_threads=1", f"--rustfs_stats={stats}"])
    assert job["read"]["total_ios"] == 8000
    c = json.loads(stats.read_text().splitlines()[-1])
    reads, rpcs = c["client.app_reads"], c["client.batch_reads"]
    assert reads >= 8000
    assert rpcs * 2 < reads, f"{rpcs} BatchRead RPCs for {reads} reads"
    # Healthy cluster: no degraded read except where a slow reply was hedged.
    assert c.get("client.reconstructions", 0) <= c.get("client.hedged_reads", 0)


@needs_engine
def test_fio_reads_of_many_files_go_together(shared_cluster, tmp_path):
    """A job over 8 files (nrfiles): the engine hands each batch to
    rustfs_read_batch_files, so a batch costs at most one BatchRead per DSS
    whatever files it spans (one rustfs_read_batch per file cost ~3 per
    file). Every block is verified against what the same job wrote."""
    common = ["--nrfiles=8", "--filesize=8m", "--size=64m", "--filename_format=/fio/many.$filenum",
              "--file_service_type=random", "--rw=randwrite", "--verify=crc32c", "--verify_fatal=1"]
    fio_engine(shared_cluster, "mw", ["--iodepth=16", "--do_verify=0"] + common)
    stats = tmp_path / "stats.json"
    job = fio_engine(shared_cluster, "mv", ["--verify_only", "--iodepth=32", "--iodepth_batch_submit=32",
                                            "--iodepth_batch_complete_min=32", "--rustfs_threads=1",
                                            f"--rustfs_stats={stats}"] + common)
    assert job["read"]["total_ios"] == 64 * MiB // 4096
    c = json.loads(stats.read_text().splitlines()[-1])
    reads, rpcs = c["client.app_reads"], c["client.batch_reads"]
    assert reads >= 64 * MiB // 4096
    assert rpcs * 2 < reads, f"{rpcs} BatchRead RPCs for {reads} reads"
