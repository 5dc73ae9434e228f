"""NUMA pinning on real daemons: each DSS pins the threads that reap its
io_uring completions, its RPC I/O threads ("dss-io"), per
random_io.numa_pinning; checked in /proc (the planner itself is unit-tested
against a fake sysfs with several nodes; this machine has one)."""
import glob
import os

from conftest import Cluster


def pinned_threads(pid):
    """{thread id: Cpus_allowed_list} of the threads of `pid` pinned to fewer
    CPUs than the process may use."""
    allowed = os.sched_getaffinity(pid)
    out = {}
    for status in glob.glob(f"/proc/{pid}/task/*/status"):
        tid = int(status.split("/")[4])
        try:
            if os.sched_getaffinity(tid) != allowed:
                out[tid] = os.sched_getaffinity(tid)
        except ProcessLookupError:
            pass
    return out


def thread_name(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/comm") as f:
        return f.read().strip()


def test_manual_pinning_puts_every_reaper_on_the_listed_cpu(tmp_root):
    cpu = max(os.sched_getaffinity(0))
    c = Cluster(tmp_root, dss=3, k=2, m=1, config_edits=[
        ('numa_pinning = "auto"', 'numa_pinning = "manual"'),
        ('poller_cpus = ""', f'poller_cpus = "{cpu}"'),
    ])
    try:
        for i in range(3):
            pid = c.pid(f"dss-{i}")
            pinned = pinned_threads(pid)
            # The I/O threads, all on that CPU, and nothing else.
            assert pinned and set(map(frozenset, pinned.values())) == {frozenset({cpu})}, pinned
            assert {thread_name(pid, t) for t in pinned} == {"dss-io"}, pinned
            assert f"on CPU {cpu}" in c.log(f"dss-{i}")
    finally:
        c.down()


def test_off_pins_nothing(tmp_root):
    c = Cluster(tmp_root, dss=3, k=2, m=1, config_edits=[
        ('numa_pinning = "auto"', 'numa_pinning = "off"')])
    try:
        for i in range(3):
            assert pinned_threads(c.pid(f"dss-{i}")) == {}
    finally:
        c.down()
