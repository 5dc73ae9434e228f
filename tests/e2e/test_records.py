"""rustfs.records: where the records of a file are, against files laid out
here record by record (no cluster needed)."""
import os
import random
import struct
import sys

import numpy as np
import pytest

from conftest import BIN

sys.path.insert(0, os.path.join(os.path.dirname(BIN), "python"))
import rustfs.records as records  # noqa: E402


def layout(n, seed, start=0):
    rng = random.Random(seed)
    out, off = [], start
    for _ in range(n):
        size = rng.randint(1, 70000)
        out.append((off, size))
        off += size
    return out


def test_tfrecord_frames(tmp_path):
    rng = random.Random(1)
    want, blob = [], b""
    for _ in range(300):
        data = os.urandom(rng.randint(0, 5000))
        frame = struct.pack("<Q", len(data)) + b"\0" * 4 + data + b"\0" * 4  # CRCs are not checked
        want.append((len(blob), len(frame)))
        blob += frame
    (tmp_path / "t.tfrecord").write_bytes(blob)
    assert records.tfrecord(tmp_path / "t.tfrecord").tolist() == [list(w) for w in want]
    (tmp_path / "cut.tfrecord").write_bytes(blob[:-3])
    with pytest.raises(ValueError):
        records.tfrecord(tmp_path / "cut.tfrecord")


def test_dali_index(tmp_path):
    want = layout(500, 2)
    (tmp_path / "t.idx").write_text("".join(f"{o} {n}\n" for o, n in want) + "\n")
    assert records.dali_index(tmp_path / "t.idx").tolist() == [list(w) for w in want]
    (tmp_path / "bad.idx").write_text("0 10 3\n")
    with pytest.raises(ValueError):
        records.dali_index(tmp_path / "bad.idx")


def test_fixed_size():
    got = records.fixed_size(10 * 4096 + 100 + 7, 4096, header=100)
    assert got.tolist() == [[100 + i * 4096, 4096] for i in range(10)]
    with pytest.raises(ValueError):
        records.fixed_size(100, 0)


def test_rustfs_index_round_trip(tmp_path):
    want = layout(1000, 3, start=64)
    records.write_index(tmp_path / "r.idx", want)
    raw = (tmp_path / "r.idx").read_bytes()
    assert raw[:8] == b"RFSIDX1\n" and struct.unpack_from("<Q", raw, 8)[0] == len(want)
    assert struct.unpack_from("<QQ", raw, 16 + 16 * 7) == want[7]
    assert records.record_index(tmp_path / "r.idx").tolist() == [list(w) for w in want]
    with pytest.raises(ValueError):
        records.write_index(tmp_path / "o.idx", [(0, 10), (5, 10)])  # overlapping
    (tmp_path / "cut.idx").write_bytes(raw[:-1])
    with pytest.raises(ValueError):
        records.record_index(tmp_path / "cut.idx")
    assert np.asarray(records.record_index(tmp_path / "r.idx")).dtype == np.uint64
