"""`rustfs cluster` as a user drives it: stopping and starting pieces of a
running local cluster."""
import os
import subprocess
import sys

from conftest import RUSTFS

# Run in a process of its own that adopts orphans and never reaps them
# (PR_SET_CHILD_SUBREAPER), as a container's init may: a daemon that
# `cluster up` started and that then exits stays a zombie. `up` must take it
# for gone, not running.
REMOUNT_OVER_A_ZOMBIE = r"""
import ctypes, os, subprocess, sys, time
rustfs, d, mnt = sys.argv[1:4]
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER

def up():
    r = subprocess.run([rustfs, "cluster", "up", "--dir", d, "--mount", mnt], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr

def fuse_pid():
    with open(os.path.join(d, "pids", "fuse.pid")) as f:
        return int(f.read())

def state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]

subprocess.run(["fusermount3", "-u", mnt], check=True)  # the fixture's daemon (not ours) goes
up()  # a new daemon: `up` exits, and it is orphaned to us
old = fuse_pid()
subprocess.run(["fusermount3", "-u", mnt], check=True)
for _ in range(400):
    if state(old) == "Z":
        break
    time.sleep(0.05)
else:
    sys.exit(f"the unmounted daemon {old} did not exit")
up()
assert os.path.ismount(mnt)
print(old, fuse_pid(), state(old))
"""


def test_remount_after_unmount_whatever_reaps_the_old_daemon(cluster):
    r = subprocess.run([sys.executable, "-c", REMOUNT_OVER_A_ZOMBIE, RUSTFS, cluster.dir, cluster.mnt],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    old, new, old_state = r.stdout.split()
    assert old != new and old_state == "Z"  # a new daemon, beside the old one's zombie
    path = os.path.join(cluster.mnt, "after-remount")
    with open(path, "wb") as f:
        f.write(b"x" * 10000)
    with open(path, "rb") as f:
        assert f.read() == b"x" * 10000
