"""Access plans end to end (LLD-002 §4): plans handed to a FUSE mount by
ioctl and by its control socket, to the native client, and by
rustfs.torch.PlannedSampler under a real PyTorch DataLoader (worker
processes, persistent workers), every sample compared with the source."""
import errno
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import BIN, Cluster, counter

MiB = 1 << 20
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHONPATH = os.path.join(os.path.dirname(BIN), "python")  # the build's rustfs package


def py(code, *args, timeout=300):
    """Runs code under Debian's python3 with the build's rustfs package."""
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    r = subprocess.run(["/usr/bin/python3", "-c", code, *args], capture_output=True, text=True,
                       timeout=timeout, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


def mount_stats(c):
    return json.loads(os.getxattr(c.mnt, "user.rustfs.stats"))


def record_file(path, n, seed):
    """n records of 4-64 KiB of random bytes; their (offset, length)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4096, 65537, size=n)
    data = rng.integers(0, 256, size=int(sizes.sum()), dtype=np.uint8).tobytes()
    with open(path, "wb") as f:
        f.write(data)
    offsets = np.zeros((n, 2), dtype=np.uint64)
    offsets[:, 0] = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    offsets[:, 1] = sizes
    return data, offsets


READ_IN_PLAN_ORDER = r"""
import json, os, sys, time
import numpy as np, rustfs
path, plan_file, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
plan = np.load(plan_file)
fd = os.open(path, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # the kernel reads exactly what is asked
t = time.time()
handle = rustfs.submit_access_plan(fd, plan)
print(json.dumps({"submit_s": time.time() - t}))
time.sleep(0.3)
for off, length in plan[:n]:
    assert len(os.pread(fd, int(length), int(off))) == length
    time.sleep(0.002)  # the training step the plan hides the reads behind
"""


@pytest.mark.parametrize("entries", [500, 1_000_000])  # the ioctl, then the control socket
def test_plan_on_the_mount_makes_reads_hits(shared_cluster, tmp_path, entries):
    c = shared_cluster
    path = c.path(f"plan-{entries}.bin")
    data, offs = record_file(path, 2000, seed=1)
    order = np.random.default_rng(2).permutation(len(offs))
    plan = offs[np.resize(order, entries)]  # a long plan repeats the records (several epochs)
    np.save(tmp_path / "plan.npy", plan)
    before = mount_stats(c)
    out = py(READ_IN_PLAN_ORDER, path, str(tmp_path / "plan.npy"), "400")
    after = mount_stats(c)
    print(f"{entries} entries accepted in {json.loads(out)['submit_s']:.3f} s")

    def d(k):
        return after.get(k, 0) - before.get(k, 0)
    assert d("client.plans_submitted") == 1
    if entries > 1000:
        assert d("fuse.control_plans") == 1
    assert d("client.plan_hits") + d("client.plan_late") >= 380  # of 400 planned reads
    assert d("client.plan_misses") == 0


def test_plans_refused_when_off(tmp_root):
    c = Cluster(tmp_root, config_edits=[("[access_plan]\nenabled = true", "[access_plan]\nenabled = false")])
    try:
        with open(c.path("f"), "wb") as f:
            f.write(b"x" * 100000)
        out = py(r"""
import errno, os, sys, rustfs
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    rustfs.submit_access_plan(fd, [(0, 4096)])
except OSError as e:
    print(e.errno)
""", c.path("f"))
        assert int(out) == errno.EOPNOTSUPP
    finally:
        c.down()


def test_native_client_plan(shared_cluster):
    c = shared_cluster
    _, offs = record_file(c.path("native.bin"), 1000, seed=3)
    np.save(os.path.join(c.dir, "native-plan.npy"), offs[::-1])
    out = py(r"""
import json, sys, time, numpy as np, rustfs
cl = rustfs.Client(sys.argv[1])
f = cl.open("/native.bin")
plan = np.load(sys.argv[2])
f.submit_access_plan(plan, 32)
time.sleep(0.3)
for off, length in plan[:300]:
    assert len(f.pread(int(off), int(length))) == length
    time.sleep(0.002)
s = json.loads(cl.stats())
print(json.dumps({k: s.get(k, 0) for k in ["client.plan_hits", "client.plan_late", "client.plan_misses"]}))
""", os.path.join(c.dir, "rustfs.toml"), os.path.join(c.dir, "native-plan.npy"))
    s = json.loads(out)
    assert s["client.plan_hits"] + s["client.plan_late"] >= 290 and s["client.plan_misses"] == 0


LOADER = r"""
import json, os, sys, time
import numpy as np, torch, rustfs, rustfs.torch as rt
from torch.utils.data import DataLoader
mode, path, src, offs_file, workers, persistent, cfg = sys.argv[1:8]
workers, persistent = int(workers), persistent == "1"
offs = np.load(offs_file)
src_bytes = open(src, "rb").read()
ds = rt.RecordDataset(path, offs, config=cfg if mode == "native" else None, batch_size=8,
                      transform=lambda b: torch.frombuffer(bytearray(b), dtype=torch.uint8))
sampler = rt.PlannedSampler(ds, offs, seed=7, epoch=0)
loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=workers,
                    persistent_workers=persistent and workers > 0, collate_fn=lambda b: b)
seen = 0
for epoch in range(2):
    sampler.set_epoch(epoch)
    order = sampler.order()
    i = 0
    for batch in loader:
        time.sleep(0.01)  # the training step of a batch
        for t in batch:
            off, n = (int(x) for x in offs[order[i]])
            assert bytes(t.numpy()) == src_bytes[off:off + n], (epoch, i)
            i += 1
    assert i == len(order)
    seen += i
print(json.dumps({"samples": seen}))
"""


@pytest.mark.parametrize("mode,workers,persistent", [("mount", 0, 0), ("mount", 2, 0), ("mount", 2, 1),
                                                     ("native", 0, 0), ("native", 2, 1)])
def test_dataloader_with_planned_sampler(shared_cluster, tmp_path, mode, workers, persistent):
    c = shared_cluster
    name = f"ds-{mode}-{workers}-{persistent}.bin"
    src = tmp_path / "src.bin"
    data, offs = record_file(src, 600, seed=workers * 10 + persistent)
    with open(c.path(name), "wb") as f:
        f.write(data)
    np.save(tmp_path / "offs.npy", offs)
    before = c.stats()
    path = c.path(name) if mode == "mount" else "/" + name
    out = py(LOADER, mode, path, str(src), str(tmp_path / "offs.npy"), str(workers), str(persistent),
             os.path.join(c.dir, "rustfs.toml"))
    samples = json.loads(out.strip().splitlines()[-1])["samples"]
    assert samples == 2 * len(offs)
    if mode == "mount":  # the mount's counters (the native clients' are their processes')
        after = c.stats()

        def d(k):
            return counter(after, "client", k) - counter(before, "client", k)
        print({k: d(k) for k in after["client"] if "plan" in k or k == "client.app_reads"})
        # Every read that reached the mount (the second epoch's records are
        # partly in the kernel's page cache) was planned, and near every one
        # found its fetch done or under way.
        assert d("client.plan_misses") == 0
        assert d("client.plan_hits") + d("client.plan_late") >= 0.95 * d("client.app_reads") > 0
