"""Where the records of a file are: (offset, length) of each, as an N x 2
uint64 array, for rustfs.torch.PlannedSampler and access plans.

* ``fixed_size(file_size, record_size, header=0)``: records of one size.
* ``tfrecord(path)``: a TFRecord file (each record: u64 length, u32 CRC of
  the length, data, u32 CRC of the data), scanned once.
* ``dali_index(idx_path)``: DALI's tfrecord2idx index, one ``offset size``
  line per record (the offsets of whole TFRecord frames).
* ``write_index(path, record_offsets)`` / ``record_index(path)``: rustfs's
  binary record index (``RFSIDX1\n``, u64 count, then (u64 offset, u64
  length) per record, little-endian).

A client with ``access_plan.auto_detect`` recognises a DALI or rustfs index
when a reader reads it, and fetches the records it lists ahead of the reads
of the file it describes (LLD-002 §4.4): keep one next to a record file and
read it first, and a plain shuffled reader is served from prefetched bytes.
"""
import os
import struct

import numpy as np


def fixed_size(file_size, record_size, header=0):
    if record_size <= 0:
        raise ValueError("record_size must be > 0")
    n = max(0, (file_size - header) // record_size)
    out = np.empty((n, 2), dtype=np.uint64)
    out[:, 0] = header + np.arange(n, dtype=np.uint64) * np.uint64(record_size)
    out[:, 1] = record_size
    return out


def tfrecord(path):
    """(offset, length) of each TFRecord frame (12-byte header, data, 4-byte
    footer), read from the file's headers only."""
    out = []
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        off = 0
        while off < size:
            f.seek(off)
            head = f.read(8)
            if len(head) < 8:
                raise ValueError(f"{path}: truncated TFRecord header at {off}")
            (n,) = struct.unpack("<Q", head)
            frame = 12 + n + 4
            if off + frame > size:
                raise ValueError(f"{path}: TFRecord at {off} runs past the end")
            out.append((off, frame))
            off += frame
    return np.array(out, dtype=np.uint64).reshape(-1, 2)


def dali_index(idx_path):
    """DALI tfrecord2idx output: one ``offset size`` line per record."""
    rows = []
    with open(idx_path) as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 2:
                raise ValueError(f"{idx_path}:{lineno}: want 'offset size', got {line.strip()!r}")
            rows.append((int(parts[0]), int(parts[1])))
    return np.array(rows, dtype=np.uint64).reshape(-1, 2)


INDEX_MAGIC = b"RFSIDX1\n"


def write_index(path, record_offsets):
    """Writes the records' (offset, length), sorted by offset and not
    overlapping, as a rustfs record index."""
    a = np.ascontiguousarray(np.asarray(record_offsets, dtype="<u8")).reshape(-1, 2)
    if len(a) and ((a[:, 1] == 0).any() or (a[1:, 0] < a[:-1, 0] + a[:-1, 1]).any()):
        raise ValueError("records must be non-empty, sorted by offset and not overlap")
    with open(path, "wb") as f:
        f.write(INDEX_MAGIC + np.uint64(len(a)).astype("<u8").tobytes() + a.tobytes())


def record_index(path):
    """The records of a rustfs record index, as an N x 2 uint64 array."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(INDEX_MAGIC) or len(data) < 16:
        raise ValueError(f"{path}: not a rustfs record index")
    (n,) = struct.unpack_from("<Q", data, 8)
    if len(data) != 16 + 16 * n:
        raise ValueError(f"{path}: {n} records in {len(data) - 16} bytes")
    return np.frombuffer(data, dtype="<u8", offset=16).reshape(-1, 2).astype(np.uint64)
