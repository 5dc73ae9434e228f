"""rustfs from Python.

Two ways in:

* ``rustfs.Client(config)``: the native client, in this process (no kernel
  crossing): ``f = Client("/tmp/rustfs-demo/cluster/rustfs.toml").open("/data.bin")``,
  then ``f.pread``, ``f.read_batch`` (many reads, one request per server),
  ``f.readinto``, ``f.fadvise``, ``f.submit_access_plan``.
* Files on a rustfs FUSE mount, read with ordinary ``open``/``os.pread``:
  ``rustfs.submit_access_plan(path_or_fd, entries)`` hands the mount the
  order of the reads to come, so it fetches them ahead (LLD-002 §4.2).

``entries`` are (offset, length) pairs in reading order: a list of pairs or
an N x 2 uint64 NumPy array. ``rustfs.torch.PlannedSampler`` does this for a
PyTorch DataLoader; ``rustfs.records`` finds the records of a file.
"""
import os
import socket
import struct

import numpy as np

from ._rustfs import PLAN_IOCTL_ENTRIES, Client, File  # noqa: F401
from . import records  # noqa: F401  (rustfs.torch is imported on demand: it needs PyTorch)

__all__ = ["Client", "File", "Plan", "submit_access_plan", "as_entries", "CONTROL_XATTR"]

CONTROL_XATTR = "user.rustfs.control"
_CONTROL_MAGIC = 0x50534652  # "RFSP"
_PLAN_MAX_ENTRIES = 1 << 26


def _ioc_w(type_char, nr, size):
    return (1 << 30) | (size << 16) | (ord(type_char) << 8) | nr


_PLAN_IOCTL_BYTES = 16 + 16 * PLAN_IOCTL_ENTRIES
RUSTFS_IOC_PLAN = _ioc_w("R", 3, _PLAN_IOCTL_BYTES)


def as_entries(entries):
    """An N x 2 C-contiguous uint64 array of (offset, length) from a list of
    pairs or an array; ValueError for anything else or a length of 0."""
    a = np.ascontiguousarray(np.asarray(entries, dtype=np.uint64))
    if a.ndim != 2 or a.shape[1] != 2:
        if a.size == 0:
            raise ValueError("empty access plan")
        raise ValueError("entries: (offset, length) pairs, an N x 2 array")
    if len(a) == 0:
        raise ValueError("empty access plan")
    if (a[:, 1] == 0).any():
        raise ValueError("an access plan entry of length 0")
    if len(a) > _PLAN_MAX_ENTRIES:
        raise ValueError(f"access plan of {len(a)} entries (at most {_PLAN_MAX_ENTRIES})")
    return a


class Plan:
    """A plan handed to a mount. The plan lasts while some process has the
    file open: this object holds a descriptor of it until close() (or
    garbage collection), so a plan handed in before the readers open the
    file is not dropped meanwhile."""

    def __init__(self, fd, owned):
        self._fd, self._owned = fd, owned

    def close(self):
        if self._owned and self._fd is not None:
            os.close(self._fd)
        self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


def submit_access_plan(fd_or_path, entries, depth=None):
    """Hands a rustfs mount the order in which the file's (offset, length)
    entries will be read, by any process reading it through that mount.
    Small plans go by ioctl, large ones (a million entries and more) through
    the mount's control socket. Returns a Plan (keep it while the plan
    matters: see Plan). OSError from the mount (EOPNOTSUPP: plans are off;
    ENOTTY: not a rustfs file)."""
    a = as_entries(entries)
    if isinstance(fd_or_path, int):
        fd, owned = fd_or_path, False
    else:
        fd, owned = os.open(fd_or_path, os.O_RDONLY | os.O_CLOEXEC), True
    try:
        if len(a) <= PLAN_IOCTL_ENTRIES:
            import fcntl
            buf = bytearray(_PLAN_IOCTL_BYTES)
            struct.pack_into("<IIQ", buf, 0, len(a), depth or 0, 0)
            buf[16:16 + a.nbytes] = a.tobytes()
            fcntl.ioctl(fd, RUSTFS_IOC_PLAN, buf)
        else:
            path = os.getxattr(fd, CONTROL_XATTR).decode()
            ino = os.fstat(fd).st_ino
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(path)
                s.sendall(struct.pack("<IIQQII", _CONTROL_MAGIC, 1, ino, len(a), depth or 0, 0))
                s.sendall(memoryview(a).cast("B"))
                reply = s.recv(4, socket.MSG_WAITALL)
            err = struct.unpack("<i", reply)[0] if len(reply) == 4 else 5  # EIO: no answer
            if err:
                raise OSError(err, os.strerror(err) + " (access plan refused by the mount)")
    except BaseException:
        if owned:
            os.close(fd)
        raise
    return Plan(fd, owned)
