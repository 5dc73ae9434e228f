"""Where the records of a file are: (offset, length) of each, as an N x 2
uint64 array, for rustfs.torch.PlannedSampler and access plans.

* ``fixed_size(file_size, record_size, header=0)``: records of one size.
* ``tfrecord(path)``: a TFRecord file (each record: u64 length, u32 CRC of
  the length, data, u32 CRC of the data), scanned once.
* ``dali_index(idx_path)``: DALI's tfrecord2idx index, one ``offset size``
  line per record (the offsets of whole TFRecord frames).
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
