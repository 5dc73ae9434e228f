"""Access plans end to end (LLD-002 §4): plans handed to a FUSE mount by
ioctl and by its control socket, to the native client, and by
rustfs.torch.PlannedSampler under a real PyTorch DataLoader (worker
processes, persistent workers), every sample compared with the source."""
import errno
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import BIN, Cluster, SecondMount

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
    # Of the 400 planned reads, those that reached the mount (every 8th
    # record, kept out of the kernel's cache, and pages it shares with a
    # neighbour) found their fetch done or under way; the rest were read
    # from the kernel's page cache, where the plan had put them.
    reached = d("client.app_reads")
    assert d("client.plan_hits") + d("client.plan_late") >= 0.95 * reached > 0
    assert reached < 300 and d("client.plan_handed") >= 400 - reached
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
def mount_stats():  # the mount's counters, at each epoch's start and end
    return json.loads(os.getxattr(os.path.dirname(path), "user.rustfs.stats")) if mode == "mount" else {}
seen, stats = 0, [mount_stats()]
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
    stats.append(mount_stats())
print(json.dumps({"samples": seen, "stats": stats}))
"""


@pytest.mark.parametrize("mode,workers,persistent", [("mount", 0, 0), ("mount", 2, 0), ("mount", 4, 1),
                                                     ("native", 0, 0), ("native", 2, 1)])
def test_dataloader_with_planned_sampler(shared_cluster, tmp_path, mode, workers, persistent):
    c = shared_cluster
    name = f"ds-{mode}-{workers}-{persistent}.bin"
    src = tmp_path / "src.bin"
    data, offs = record_file(src, 600, seed=workers * 10 + persistent)
    with open(c.path(name), "wb") as f:
        f.write(data)
    np.save(tmp_path / "offs.npy", offs)
    path = c.path(name) if mode == "mount" else "/" + name
    out = py(LOADER, mode, path, str(src), str(tmp_path / "offs.npy"), str(workers), str(persistent),
             os.path.join(c.dir, "rustfs.toml"))
    result = json.loads(out.strip().splitlines()[-1])
    assert result["samples"] == 2 * len(offs)
    if mode == "mount":  # the mount's counters (the native clients' are their processes')
        start, first, second = result["stats"]

        def d(k, a=start, b=second):
            return b.get(k, 0) - a.get(k, 0)
        print({k: (d(k, start, first), d(k, first, second)) for k in second if "plan" in k or k == "client.app_reads"})
        # Every read that reached the mount was planned.
        assert d("client.plan_misses") == 0
        # In the first epoch the mount sees the readers' progress (every
        # record not handed to the kernel, and every 8th kept from it, is
        # read through it): near every read found its fetch done or under
        # way.
        reached = d("client.app_reads", start, first)
        assert d("client.plan_hits", start, first) + d("client.plan_late", start, first) >= 0.95 * reached > 0
        # The second epoch's records are in the kernel's page cache: its
        # reads go by without the mount, which cannot know how far they
        # are. The few that reach it (pages the kernel no longer holds
        # though the first epoch stored or read them: 0-5 a run here, with
        # no reclaim and no invalidation of ours) can come before the plan's
        # fetching: they are not asserted to be hits.
        # Most records went to the kernel's page cache (the samples above
        # were read from it, byte-equal) and were read without a FUSE read.
        assert d("client.plan_handed") >= len(offs) / 2
        assert d("client.app_reads") < len(offs)  # of 2 x len(offs) reads


# --- hand-off: plan-fetched records in the kernel's page cache ---

def wait_for(pred, what, timeout=20):
    end = time.time() + timeout
    while not pred():
        assert time.time() < end, what
        time.sleep(0.05)


def test_handed_records_follow_writes_here_and_elsewhere(two_clients):
    """Records handed to mount A's kernel are read from it with no FUSE
    read, and never hide a later write: one through A itself, one through a
    second mount B (a revocation)."""
    sys.path.insert(0, PYTHONPATH)
    import rustfs
    c, b = two_clients
    # Written through B: A never had it open for writing (no hand-off
    # while a writer's handle is open, and its release reaches the daemon
    # after close returns).
    data, offs = record_file(b.path("coh.bin"), 300, seed=21)
    data = bytearray(data)
    fd = os.open(c.path("coh.bin"), os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        s0 = mount_stats(c)
        plan = rustfs.submit_access_plan(fd, offs)  # file order: entry i is record i
        # The first depth (64) entries are fetched before any read; all
        # but every 8th go to the kernel.
        wait_for(lambda: mount_stats(c).get("client.plan_handed", 0) - s0.get("client.plan_handed", 0) >= 56,
                 "records handed to the kernel")

        def rec(i):
            off, n = (int(x) for x in offs[i])
            return off, n
        r0 = mount_stats(c).get("client.app_reads", 0)
        for i in (0, 1, 2, 3):
            off, n = rec(i)
            assert os.pread(fd, n, off) == bytes(data[off:off + n]), i
        assert mount_stats(c).get("client.app_reads", 0) == r0  # all four from the kernel
        # A record in A's kernel cache overwritten through A itself, then
        # one through B (A's lease is revoked, its kernel's pages go): A
        # reads the new bytes at once.
        for i, where in ((10, c), (20, b)):
            off, n = rec(i)
            patch = os.urandom(n)
            with open(where.path("coh.bin"), "r+b") as f:
                f.seek(off)
                f.write(patch)
            data[off:off + n] = patch
            assert os.pread(fd, n, off) == patch, i
        for i in range(len(offs)):  # every record as the file now holds it
            off, n = rec(i)
            assert os.pread(fd, n, off) == bytes(data[off:off + n]), i
        plan.close()
    finally:
        os.close(fd)


def test_kernel_handoff_off(tmp_root, tmp_path):
    c = Cluster(tmp_root, config_edits=[("kernel_handoff = true", "kernel_handoff = false")])
    try:
        data, offs = record_file(c.path("f.bin"), 200, seed=22)
        np.save(tmp_path / "plan.npy", offs)
        before = mount_stats(c)
        py(READ_IN_PLAN_ORDER, c.path("f.bin"), str(tmp_path / "plan.npy"), "200")
        after = mount_stats(c)

        def d(k):
            return after.get(k, 0) - before.get(k, 0)
        assert d("client.plan_handed") == 0 and d("client.plan_kernel_bytes") == 0
        assert d("client.plan_hits") + d("client.plan_late") >= 190  # every read reached the mount
    finally:
        c.down()


# --- plans the client makes up itself (LLD-002 §4.4, access_plan.auto_detect) ---

INDEX_THEN_SHUFFLE = r"""
import json, os, random, sys, time
import numpy as np, rustfs
mode, data_path, idx_path, src, cfg = sys.argv[1:6]
src_bytes = open(src, "rb").read()
if mode == "mount":
    stats = lambda: json.loads(os.getxattr(os.path.dirname(data_path), "user.rustfs.stats"))
    before = stats()
    with open(idx_path, "rb") as f:  # the reader reads the index first...
        idx = f.read()
    fd = os.open(data_path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    pread = lambda off, n: os.pread(fd, n, off)
else:
    cl = rustfs.Client(cfg)
    stats = lambda: json.loads(cl.stats())
    before = stats()
    i = cl.open(idx_path)
    idx = i.pread(0, i.size())
    f = cl.open(data_path)
    pread = f.pread
tmp = os.path.join(os.environ["TMPDIR"], "idx")
open(tmp, "wb").write(idx)
recs = rustfs.records.record_index(tmp) if idx.startswith(rustfs.records.INDEX_MAGIC) else rustfs.records.dali_index(tmp)
time.sleep(0.3)  # the index is loaded in the background
order = list(range(len(recs)))
random.Random(5).shuffle(order)
for k in order[:300]:  # ...then reads its records in a shuffled order
    off, n = (int(x) for x in recs[k])
    assert pread(off, n) == src_bytes[off:off + n], k
    time.sleep(0.002)
after = stats()
print(json.dumps({k: after.get(k, 0) - before.get(k, 0) for k in after}))
"""


def run_index_reader(c, tmp_path, mode, index_kind, cfg_edits=()):
    name = f"auto-{mode}-{index_kind}-{len(cfg_edits)}"
    data, offs = record_file(tmp_path / "src.bin", 600, seed=11)
    with open(c.path(name + ".rec"), "wb") as f:
        f.write(data)
    if index_kind == "dali":
        with open(c.path(name + ".idx"), "w") as f:
            f.writelines(f"{o} {n}\n" for o, n in offs)
    else:
        np.save(tmp_path / "offs.npy", offs)
        py("import sys, numpy as np, rustfs\nrustfs.records.write_index(sys.argv[1], np.load(sys.argv[2]))",
           c.path(name + ".idx"), str(tmp_path / "offs.npy"))
    cfg = tmp_path / "client.toml"
    text = open(os.path.join(c.dir, "rustfs.toml")).read()
    for old, new in cfg_edits:
        text = text.replace(old, new)
    cfg.write_text(text)
    where = (lambda p: c.path(p)) if mode == "mount" else (lambda p: "/" + p)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH, TMPDIR=str(tmp_path))
    r = subprocess.run(["/usr/bin/python3", "-c", INDEX_THEN_SHUFFLE, mode, where(name + ".rec"),
                        where(name + ".idx"), str(tmp_path / "src.bin"), str(cfg)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


@pytest.mark.parametrize("mode,index_kind", [("mount", "dali"), ("native", "rustfs")])
def test_record_index_plans_a_shuffled_reader(shared_cluster, tmp_path, mode, index_kind):
    d = run_index_reader(shared_cluster, tmp_path, mode, index_kind)
    print({k: v for k, v in d.items() if "plan" in k or "auto" in k})
    assert d["client.auto_index_files"] >= 1
    assert d["client.auto_index_plans"] == 1
    # The shuffled reads found their records fetched (the first started the
    # plan; a few may come before the fetching reaches theirs). On the
    # mount, reads that never reached it were served by the kernel from
    # records the plan handed it.
    reached = sum(d.get(k, 0) for k in ["client.plan_hits", "client.plan_late", "client.plan_early",
                                        "client.plan_misses"])
    from_kernel = min(300 - reached, d.get("client.plan_handed", 0))
    assert d["client.plan_hits"] + d["client.plan_late"] + from_kernel >= 270
    assert d["client.plan_misses"] == 0


def test_auto_detect_off(shared_cluster, tmp_path):
    d = run_index_reader(shared_cluster, tmp_path, "native", "rustfs",
                         [("auto_detect = true", "auto_detect = false")])
    assert d.get("client.auto_index_files", 0) == 0 and d.get("client.auto_index_plans", 0) == 0
    assert d.get("client.plan_hits", 0) == 0


STRIDED = r"""
import json, sys, time, rustfs
cfg, path, src = sys.argv[1:4]
src_bytes = open(src, "rb").read()
cl = rustfs.Client(cfg)
f = cl.open(path)
before = json.loads(cl.stats())
R = 16384
for i in range(60):  # every 5th record, from the 3rd: rank 3 of 5, unshuffled
    off = (3 + 5 * i) * R
    assert f.pread(off, R) == src_bytes[off:off + R], i
    time.sleep(0.005)
after = json.loads(cl.stats())
print(json.dumps({k: after.get(k, 0) - before.get(k, 0) for k in after}))
"""


@pytest.mark.parametrize("auto", [True, False])
def test_strided_reader_is_prefetched(shared_cluster, tmp_path, auto):
    c = shared_cluster
    data = os.urandom(400 * 16384)
    (tmp_path / "src.bin").write_bytes(data)
    with open(c.path(f"strided-{auto}.bin"), "wb") as f:
        f.write(data)
    text = open(os.path.join(c.dir, "rustfs.toml")).read()
    if not auto:
        text = text.replace("auto_detect = true", "auto_detect = false")
    (tmp_path / "client.toml").write_text(text)
    r = subprocess.run(["/usr/bin/python3", "-c", STRIDED, str(tmp_path / "client.toml"), f"/strided-{auto}.bin",
                        str(tmp_path / "src.bin")], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=PYTHONPATH))
    assert r.returncode == 0, r.stderr[-3000:]
    d = json.loads(r.stdout)
    print({k: v for k, v in d.items() if "stride" in k or "cache" in k})
    if auto:
        # From the 5th read on, each read's record was predicted before it
        # came, and found in the stream tier.
        assert d["client.auto_stride_prefetches"] >= 55
        assert d["client.stream_cache.hits"] >= 50
    else:
        assert d.get("client.auto_stride_prefetches", 0) == 0
        assert d.get("client.stream_cache.hits", 0) == 0


READ_PLANS_UNTIL_STOPPED = r"""
import os, sys
import numpy as np, rustfs
path, plan_file, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
offs = np.load(plan_file)
rng = np.random.default_rng(seed)
fd = os.open(path, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
print("reading", flush=True)
try:
    while True:  # epoch after epoch, as fast as it goes: reads catch up with the fetching
        plan = offs[rng.permutation(len(offs))]
        rustfs.submit_access_plan(fd, plan)
        for off, length in plan:
            os.pread(fd, int(length), int(off))
except OSError:
    pass  # the mount went away under us
"""


def test_stop_by_signal_while_planned_reads_run(shared_cluster, tmp_root, tmp_path):
    """SIGTERM to a mount's daemon while readers chase their plans: it
    stops cleanly (exit status 0) and unmounts. The order it stops in
    matters: its hand-offs into the kernel's page cache wait for the locks
    of pages that queued reads hold, and those are answered only while the
    session loop runs; so its calls into the kernel end first."""
    c = shared_cluster
    _, offs = record_file(c.path("stop.bin"), 2000, seed=5)
    np.save(tmp_path / "offs.npy", offs)
    m2 = SecondMount(c, tmp_root)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    readers = [subprocess.Popen(["/usr/bin/python3", "-c", READ_PLANS_UNTIL_STOPPED, m2.path("stop.bin"),
                                 str(tmp_path / "offs.npy"), str(seed)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
               for seed in range(4)]
    try:
        for r in readers:
            assert r.stdout.readline().strip() == b"reading"
        time.sleep(3)
        assert m2.stats().get("client.plan_handed", 0) > 0  # hand-offs are under way
        os.kill(m2.proc.pid, signal.SIGTERM)
        assert m2.proc.wait(timeout=60) == 0  # a clean stop, not a failure (systemd)
        assert not os.path.ismount(m2.mnt)
        with open(m2.log.name) as f:
            assert "stopping on signal 15" in f.read()
    finally:
        for r in readers:
            r.kill()
            r.wait()
        m2.close()
