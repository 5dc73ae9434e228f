"""PyTorch: hand the epoch's order to storage (LLD-002 §4.3).

``PlannedSampler(dataset, record_offsets, seed, epoch, num_replicas=None,
rank=None)`` draws the epoch's order as ``random.Random(seed + epoch)
.shuffle`` does, takes ``rank::num_replicas`` of it with replicas (padded
like DistributedSampler), and when iteration starts hands the materialised
order, as the records' (offset, length), to storage, so the reads of the
epoch find their bytes fetched. ``set_epoch`` as DistributedSampler.

Where the plan goes depends on how the dataset reads:

* a file on a rustfs mount (``dataset.path``): to the mount, which serves
  every DataLoader worker process (one plan per file, shared);
* the native client in each process (``RecordDataset(config=..., ...)``):
  each worker hands its own client the part of the order it will read
  (DataLoader deals batches round-robin to its workers), read from a small
  shared file the sampler rewrites every epoch, so persistent workers follow
  the epochs too.
"""
import math
import os
import random
import tempfile

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler, get_worker_info

import rustfs

__all__ = ["PlannedSampler", "RecordDataset"]


class RecordDataset(Dataset):
    """The records of one file, as bytes (or ``transform(bytes)``).

    path: the file, on a rustfs mount (read with os.pread), or, with
    config (a cluster's rustfs.toml), the path inside the cluster (read with
    the native client, one per process). batch_size: the DataLoader's, so
    that workers of a native dataset know which part of a plan they read.
    """

    def __init__(self, path, record_offsets, config=None, batch_size=1, transform=None):
        self.path, self.config, self.batch_size, self.transform = path, config, batch_size, transform
        self.offsets = rustfs.as_entries(record_offsets)
        self._fd = self._file = None
        self._plan_path = None  # shared order of a PlannedSampler (native, workers)
        self._plan_gen = -1

    def __len__(self):
        return len(self.offsets)

    def __getstate__(self):  # to worker processes: without open handles
        d = dict(self.__dict__)
        d["_fd"] = d["_file"] = None
        d["_plan_gen"] = -1
        return d

    @property
    def native(self):
        return self.config is not None

    def native_file(self):
        if self._file is None:
            self._file = rustfs.Client(self.config).open(self.path)
        return self._file

    def _follow_plan(self):
        """Native: the sampler's current order, the part of it this process
        reads (all of it without workers), to this process's client."""
        info = get_worker_info()
        if self._plan_path is None:
            return
        shared = np.memmap(self._plan_path, dtype=np.uint64, mode="r")
        gen = int(shared[0])
        if gen == self._plan_gen:
            return
        self._plan_gen = gen
        order = np.asarray(shared[2:2 + int(shared[1])])
        b, w, n = self.batch_size, (info.id if info else 0), (info.num_workers if info else 1)
        batches = [order[i:i + b] for i in range(w * b, len(order), n * b)]
        if batches:
            mine = np.concatenate(batches).astype(np.int64)
            self.native_file().submit_access_plan(self.offsets[mine], 0)

    def __getitem__(self, i):
        off, length = (int(x) for x in self.offsets[i])
        if self.native:
            self._follow_plan()
            data = self.native_file().pread(off, length)
        else:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
                # The plan fetches what is read next; the kernel's
                # readahead would only read the neighbours' bytes.
                os.posix_fadvise(self._fd, 0, 0, os.POSIX_FADV_RANDOM)
            data = os.pread(self._fd, length, off)
        if len(data) != length:
            raise IOError(f"{self.path}: record {i} at {off}: {len(data)} of {length} bytes")
        return self.transform(data) if self.transform else data


class PlannedSampler(Sampler):
    def __init__(self, dataset, record_offsets, seed=0, epoch=0, num_replicas=None, rank=None,
                 depth=None):
        self.dataset = dataset
        self.offsets = rustfs.as_entries(record_offsets)
        if len(self.offsets) != len(dataset):
            raise ValueError(f"{len(self.offsets)} record offsets for a dataset of {len(dataset)}")
        if num_replicas is None:
            num_replicas = torch.distributed.get_world_size() if torch.distributed.is_available() and \
                torch.distributed.is_initialized() else 1
        if rank is None:
            rank = torch.distributed.get_rank() if num_replicas > 1 else 0
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank {rank} not in [0, {num_replicas})")
        self.seed, self.epoch, self.num_replicas, self.rank, self.depth = seed, epoch, num_replicas, rank, depth
        self.num_samples = math.ceil(len(dataset) / num_replicas)
        self._plan = None     # the mount's (a rustfs.Plan)
        self._shared = None   # native workers' order (a file in /dev/shm)
        if isinstance(dataset, RecordDataset) and dataset.native:
            fd, path = tempfile.mkstemp(prefix="rustfs-plan-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
            os.close(fd)
            self._shared = np.memmap(path, dtype=np.uint64, mode="w+", shape=(2 + self.num_samples,))
            self._shared_path = path
            dataset._plan_path = path

    def __del__(self):
        if self._plan is not None:
            self._plan.close()
        if self._shared is not None:
            del self._shared
            try:
                os.unlink(self._shared_path)
            except OSError:
                pass

    def set_epoch(self, epoch):
        self.epoch = epoch

    def order(self):
        """This rank's order for the current epoch (a list of indices)."""
        idx = list(range(len(self.dataset)))
        random.Random(self.seed + self.epoch).shuffle(idx)
        if self.num_replicas > 1:  # as DistributedSampler: pad, then every num_replicas-th
            total = self.num_samples * self.num_replicas
            idx += (idx * math.ceil(total / len(idx)))[:total - len(idx)]
            idx = idx[self.rank:total:self.num_replicas]
        return idx

    def __len__(self):
        return self.num_samples

    def __iter__(self):
        order = self.order()
        entries = self.offsets[np.asarray(order, dtype=np.int64)]
        ds = self.dataset
        if isinstance(ds, RecordDataset) and ds.native:
            # Each reading process (the workers, or this one without them)
            # takes its part from the shared order at its next read.
            self._shared[2:2 + len(order)] = np.asarray(order, dtype=np.uint64)
            self._shared[1] = len(order)
            self._shared[0] += 1
            self._shared.flush()
        else:
            path = getattr(ds, "path", None)
            if path is None:
                raise TypeError("PlannedSampler: the dataset has no `path` of a file on a rustfs mount")
            old, self._plan = self._plan, rustfs.submit_access_plan(path, entries, self.depth)
            if old is not None:
                old.close()  # after the new plan is in: the file stays open throughout
        return iter(order)
