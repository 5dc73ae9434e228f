"""POSIX semantics on the mount, as ordinary tools use them (DESIGN.md §7):
no write lost or reordered by a metadata change, trees copied by cp -a,
rsync and tar equal to their source, files that live on through open
handles after their last name goes, write errors reported to every writer,
and the operations a file system must have (symlinks, hard links, special
files, fallocate, extended attributes, advisory locks across mounts)."""
import errno
import fcntl
import os
import signal
import socket
import sqlite3
import stat
import struct
import subprocess
import sys
import threading
import time

import pytest

from conftest import counter, drop_caches, two_mounts
from posix_tree import assert_same_tree, make_source_tree

MiB = 1 << 20


def wait_for(pred, timeout, what):
    """Polls pred() until true, for at most `timeout` seconds."""
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return
        time.sleep(0.1)
    assert pred(), what


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.fixture
def quick(tmp_root):
    """Two mounts of a cluster with a 2 s lease and a 2 s RPC timeout, so
    shards made garbage are deleted 4 s later and a silent client's lease
    runs out fast."""
    yield from two_mounts(tmp_root, lease_ms=2000,
                          config_edits=[("rpc_timeout_ms = 5000", "rpc_timeout_ms = 2000")])


# Time for shards made garbage to be deleted in the `quick` cluster: the
# garbage delay (lease + RPC timeout) plus a GC pass.
GC_WAIT = 6


def orphans_collected(c):
    return counter(c.stats(), "mds", "mds.orphans_collected")


# --- 1. No write lost or reordered by a metadata change ---------------------

METADATA_CHANGES = {
    "chmod": lambda p, fd: os.chmod(p, 0o600),
    "fchmod": lambda p, fd: os.fchmod(fd, 0o640),
    "chown": lambda p, fd: os.chown(p, 1000, 1000),
    "utime": lambda p, fd: os.utime(p, ns=(1_000_000_000_000_000_000, 1_100_000_000_000_000_000)),
    "futimens": lambda p, fd: os.utime(fd, ns=(1_000_000_000_000_000_000, 1_100_000_000_000_000_000)),
    "setxattr": lambda p, fd: os.setxattr(p, "user.k", b"v"),
    "rename": lambda p, fd: os.rename(p, p + ".moved"),
    "link": lambda p, fd: os.link(p, p + ".link"),
    "truncate_up": lambda p, fd: os.truncate(p, 9 * MiB),
    "ftruncate_same": lambda p, fd: os.ftruncate(fd, 5 * MiB + 123),
}


@pytest.mark.parametrize("change", sorted(METADATA_CHANGES))
def test_metadata_change_keeps_buffered_writes(shared_cluster, change):
    c = shared_cluster
    p = c.path("meta_" + change)
    data = os.urandom(5 * MiB + 123)  # a full chunk and a partial one, buffered
    fd = os.open(p, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        METADATA_CHANGES[change](p, fd)
        os.write(fd, b"after")  # and writes after the change land too
    finally:
        os.close(fd)
    want = data + b"after"
    if change == "truncate_up":
        want = want + bytes(9 * MiB - len(want))
    final = p + ".moved" if change == "rename" else p
    drop_caches()
    assert read_all(final) == want
    st = os.stat(final)
    assert st.st_size == len(want)
    if change == "link":
        assert os.stat(p + ".link").st_ino == st.st_ino and st.st_nlink == 2


def test_times_set_after_writes_are_kept(shared_cluster):
    # cp -a: write, fchmod, futimens, close. The close publishes nothing new,
    # and the times stay what futimens set.
    p = shared_cluster.path("times")
    fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, os.urandom(3 * MiB))
    os.fchmod(fd, 0o600)
    os.utime(fd, ns=(1_200_000_000_000_000_001, 1_300_000_000_000_000_002))
    os.close(fd)
    st = os.stat(p)
    assert (st.st_atime_ns, st.st_mtime_ns) == (1_200_000_000_000_000_001, 1_300_000_000_000_000_002)
    assert st.st_mode & 0o7777 == 0o600 and st.st_size == 3 * MiB


def test_change_by_other_client_recalls_buffered_writes(two_clients):
    c, b = two_clients
    a_path, b_path = c.path("recall"), b.path("recall")
    data = os.urandom(3 * MiB)
    fd = os.open(a_path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.write(fd, data)  # buffered in mount A
        os.chmod(b_path, 0o600)  # B's change first makes A publish
        assert read_all(b_path) == data
        os.utime(b_path, ns=(10**18, 10**18))
        os.truncate(b_path, MiB + 7)  # cuts A's published bytes, as on one machine
    finally:
        os.close(fd)  # nothing left to publish: the truncate stands
    assert read_all(a_path) == data[:MiB + 7]
    assert os.stat(b_path).st_size == MiB + 7
    assert counter(c.stats(), "client", "client.recalls") >= 1


# --- cp -a, rsync -a (temp+rename and --inplace), tar -x of real trees -----

def test_cp_rsync_tar_copy_trees_exactly(cluster, tmp_path):
    src = str(tmp_path / "src")
    make_source_tree(src)
    c = cluster

    t0 = time.time()
    r = subprocess.run(["cp", "-a", src, c.path("cp")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    cp_s = time.time() - t0
    n = assert_same_tree(src, c.path("cp"))
    print(f"cp -a: {n} entries in {cp_s:.1f} s ({n / cp_s:.0f} entries/s)")
    drop_caches()
    assert_same_tree(src, c.path("cp"))  # from the cluster, not the kernel's cache

    # rsync -a (no -H: hard links arrive as separate files) with its default
    # temp file + rename, then an update of changed files both ways.
    rsync = ["rsync", "-a", "--numeric-ids"]
    r = subprocess.run(rsync + [src + "/", c.path("rs") + "/"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert_same_tree(src, c.path("rs"), hard_links=False)
    gen = os.path.join(src, "gen")
    with open(os.path.join(gen, "d00", "f00"), "ab") as f:
        f.write(b"appended")
    with open(os.path.join(gen, "d01", "f01"), "r+b") as f:
        f.seek(10)
        f.write(b"overwritten in place")
    os.truncate(os.path.join(gen, "d02", "f02"), 1)
    os.chmod(os.path.join(gen, "d03", "f03"), 0o700)
    os.unlink(os.path.join(gen, "d04", "f04"))
    for extra in ([], ["--inplace"]):
        for name in ("d05/f05", "d06/f06"):
            with open(os.path.join(gen, name), "ab") as f:
                f.write(os.urandom(5000))
        r = subprocess.run(rsync + ["--delete"] + extra + [src + "/", c.path("rs") + "/"],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        assert_same_tree(src, c.path("rs"), hard_links=False, dir_mtimes=False)

    # tar -x (sparse files archived as sparse, owners by number).
    archive = str(tmp_path / "tree.tar")
    r = subprocess.run(["tar", "-C", src, "-cSf", archive, "."], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    os.mkdir(c.path("tar"))
    r = subprocess.run(["tar", "-C", c.path("tar"), "--numeric-owner", "-xpf", archive],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert_same_tree(src, c.path("tar"), mtime_resolution_ns=10**9)  # tar keeps seconds


# --- 2. POSIX lifetimes -----------------------------------------------------

def test_unlinked_file_lives_until_last_close_in_any_client(quick):
    c, b = quick
    data = os.urandom(6 * MiB)
    with open(c.path("u"), "wb") as f:
        f.write(data)
    before = orphans_collected(c)
    fd = os.open(b.path("u"), os.O_RDWR)  # open in mount B
    try:
        os.unlink(c.path("u"))  # unlinked in mount A
        assert not os.path.exists(b.path("u"))
        time.sleep(GC_WAIT)  # long enough for garbage to be deleted
        drop_caches()
        assert os.pread(fd, len(data), 0) == data
        os.pwrite(fd, b"still writable", 4 * MiB)
        os.fsync(fd)
        assert os.pread(fd, 14, 4 * MiB) == b"still writable"
        assert os.fstat(fd).st_nlink == 0
        assert orphans_collected(c) == before
    finally:
        os.close(fd)
    wait_for(lambda: orphans_collected(c) == before + 1, 10, "orphan not collected after the last close")


def test_file_renamed_over_stays_readable_through_open_handle(quick):
    # The rsync / editor / package-manager pattern: write a temp file, rename
    # it over the old one while a reader has the old one open.
    c, b = quick
    old, new = os.urandom(2 * MiB), os.urandom(2 * MiB)
    with open(c.path("cfg"), "wb") as f:
        f.write(old)
    fd = os.open(c.path("cfg"), os.O_RDONLY)
    try:
        with open(b.path(".cfg.tmp"), "wb") as f:
            f.write(new)
        os.rename(b.path(".cfg.tmp"), b.path("cfg"))
        time.sleep(GC_WAIT)
        drop_caches()
        assert os.pread(fd, len(old), 0) == old
        assert read_all(c.path("cfg")) == new
    finally:
        os.close(fd)


def test_crashed_clients_open_files_end_with_its_lease(quick):
    c, b = quick
    with open(c.path("held"), "wb") as f:
        f.write(os.urandom(MiB))
    before = orphans_collected(c)
    holder = subprocess.Popen([sys.executable, "-c", "import os,sys,time; fd=os.open(sys.argv[1], os.O_RDONLY); "
                               "print('open', flush=True); time.sleep(300)", b.path("held")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        os.unlink(c.path("held"))
        time.sleep(1)
        assert orphans_collected(c) == before  # B has it open
        b.proc.kill()  # B's client dies without a word
    finally:
        holder.kill()
        holder.wait()
    wait_for(lambda: orphans_collected(c) == before + 1, 15, "orphan kept after its client's lease ended")


def test_read_racing_overwrites_never_fails(quick):
    c, b = quick
    versions = [bytes([v]) * (4 * MiB) for v in range(6)]
    with open(c.path("race"), "wb") as f:
        f.write(versions[0])
    stop = threading.Event()
    errors = []

    def reader():
        fd = os.open(c.path("race"), os.O_RDONLY | os.O_DIRECT)
        import mmap
        buf = mmap.mmap(-1, 65536)
        try:
            while not stop.is_set():
                for off in range(0, 4 * MiB, 1 << 20):
                    try:
                        n = os.preadv(fd, [buf], off)
                    except OSError as e:
                        errors.append(e)
                        return
                    chunk = bytes(buf[:n])
                    if n != 65536 or chunk.count(chunk[:1]) != n:
                        errors.append(ValueError("torn read at %d" % off))
                        return
        finally:
            os.close(fd)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for v in versions[1:]:
            with open(b.path("race"), "r+b") as f:  # overwrite in place: new chunk versions
                f.write(v)
            time.sleep(1.5)
        time.sleep(GC_WAIT)  # the old versions' shards are deleted while reads go on
    finally:
        stop.set()
        t.join(timeout=60)
    assert not errors, errors


# --- 3. Write errors are never swallowed ------------------------------------

def test_failed_publication_reported_to_every_writer_once(cluster):
    c = cluster
    p = c.path("doomed")
    with open(p, "wb") as f:
        f.write(b"old contents")
    fd1 = os.open(p, os.O_RDWR)
    fd2 = os.open(p, os.O_RDWR)
    stopped = ["dss-0", "dss-1", "dss-2"]  # more than M: no chunk version can be written
    try:
        os.pwrite(fd1, os.urandom(MiB), 0)
        os.pwrite(fd2, os.urandom(MiB), 2 * MiB)
        for d in stopped:
            c.kill(d)
        with pytest.raises(OSError) as e1:
            os.fsync(fd1)
        assert e1.value.errno == errno.EIO
        with pytest.raises(OSError) as e2:
            os.fsync(fd2)  # the other writer learns of it too
        assert e2.value.errno == errno.EIO
        os.fsync(fd1)  # reported once per descriptor
        fd3 = os.open(p, os.O_RDONLY)
        os.fsync(fd3)  # opened after the error: not its error
        os.close(fd3)
    finally:
        with pytest.raises(OSError) as e3:
            os.close(fd1)  # close reports it to this descriptor too
        assert e3.value.errno == errno.EIO
        try:
            os.close(fd2)
        except OSError:
            pass
        c.up()
    # Nothing was published: the file keeps its last contents.
    assert read_all(p) == b"old contents"


def test_fsynced_data_survives_sigkill_of_every_daemon(cluster):
    c = cluster
    data = os.urandom(3 * MiB + 17)
    fd = os.open(c.path("durable"), os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, data)
    os.fsync(fd)
    for name in ["mds", "fuse"] + ["dss-%d" % i for i in range(c.ndss)]:
        try:
            c.kill(name)
        except (FileNotFoundError, ProcessLookupError):
            pass
    try:
        os.close(fd)
    except OSError:
        pass
    subprocess.run(["fusermount3", "-u", "-z", c.mnt], capture_output=True)
    c.up()
    assert read_all(c.path("durable")) == data


# --- 4. The missing operations ----------------------------------------------

def test_symlinks(two_clients):
    c, b = two_clients
    with open(c.path("target"), "w") as f:
        f.write("through the link")
    os.symlink("target", c.path("ln"))
    os.symlink("/nonexistent/x", c.path("dangling"))
    assert os.readlink(b.path("ln")) == "target"
    assert read_all(b.path("ln")) == b"through the link"
    st = os.lstat(b.path("ln"))
    assert stat.S_ISLNK(st.st_mode) and st.st_size == len("target")
    assert os.readlink(b.path("dangling")) == "/nonexistent/x"
    assert not os.path.exists(b.path("dangling"))
    os.symlink("loop2", c.path("loop1"))
    os.symlink("loop1", c.path("loop2"))
    with pytest.raises(OSError) as e:
        open(c.path("loop1"))
    assert e.value.errno == errno.ELOOP


def test_hard_links_seen_in_other_mount(two_clients):
    c, b = two_clients
    with open(c.path("orig"), "wb") as f:
        f.write(b"shared inode")
    os.link(c.path("orig"), c.path("second"))
    os.mkdir(c.path("sub"))
    os.link(c.path("orig"), c.path("sub", "third"))
    sa, sb = os.stat(b.path("orig")), os.stat(b.path("sub", "third"))
    assert sa.st_ino == sb.st_ino and sa.st_nlink == 3
    with open(b.path("second"), "r+b") as f:
        f.write(b"SHARED")
    assert read_all(c.path("sub", "third")) == b"SHARED inode"
    os.unlink(c.path("orig"))
    assert os.stat(b.path("second")).st_nlink == 2
    assert read_all(b.path("second")) == b"SHARED inode"
    with pytest.raises(OSError) as e:
        os.link(c.path("sub"), c.path("dirlink"))
    assert e.value.errno == errno.EPERM


def test_special_files(cluster):
    c = cluster
    os.mkfifo(c.path("fifo"), 0o640)
    assert stat.S_ISFIFO(os.stat(c.path("fifo")).st_mode)
    # The FIFO works (the kernel carries its data).
    r = subprocess.Popen(["cat", c.path("fifo")], stdout=subprocess.PIPE)
    with open(c.path("fifo"), "w") as f:
        f.write("through the pipe")
    assert r.communicate(timeout=10)[0] == b"through the pipe"
    os.mknod(c.path("chr"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
    os.mknod(c.path("blk"), stat.S_IFBLK | 0o600, os.makedev(7, 0))
    assert os.stat(c.path("chr")).st_rdev == os.makedev(1, 3)
    assert stat.S_ISBLK(os.stat(c.path("blk")).st_mode)
    # The mount is nodev (as FUSE mounts are by default): a device node is
    # stored and copied, not opened.
    with pytest.raises(PermissionError):
        open(c.path("chr"), "rb")
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(c.path("sock"))
        assert stat.S_ISSOCK(os.stat(c.path("sock")).st_mode)
    finally:
        s.close()


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (cmd, r.stderr)


def test_fallocate_modes(cluster):
    c = cluster
    p = c.path("falloc")
    data = os.urandom(10 * MiB)
    with open(p, "wb") as f:
        f.write(data)
    ref = bytearray(data)
    run(["fallocate", "-o", str(12 * MiB), "-l", str(MiB), p])  # mode 0: grows
    ref += bytes(3 * MiB)
    assert os.stat(p).st_size == 13 * MiB
    run(["fallocate", "-n", "-o", str(20 * MiB), "-l", str(MiB), p])  # KEEP_SIZE
    assert os.stat(p).st_size == 13 * MiB
    run(["fallocate", "-p", "-o", str(MiB + 5), "-l", str(6 * MiB), p])  # punch: whole chunk + parts
    ref[MiB + 5:7 * MiB + 5] = bytes(6 * MiB)
    run(["fallocate", "-z", "-o", "100", "-l", "300", p])  # zero range inside a page
    ref[100:400] = bytes(300)
    run(["fallocate", "-z", "-o", str(12 * MiB), "-l", str(2 * MiB), p])  # zero range past the end grows
    ref += bytes(MiB)
    drop_caches()
    assert os.stat(p).st_size == len(ref)
    assert read_all(p) == bytes(ref)
    r = subprocess.run(["fallocate", "-c", "-o", "0", "-l", str(4 * MiB), p], capture_output=True, text=True)
    assert r.returncode != 0 and "not supported" in r.stderr.lower()  # collapse: honest EOPNOTSUPP


def test_user_xattrs(two_clients):
    c, b = two_clients
    p = c.path("x")
    with open(p, "w") as f:
        f.write("x")
    os.setxattr(p, "user.one", b"1")
    os.setxattr(p, "user.bin", bytes(range(256)) * 40)
    assert os.getxattr(b.path("x"), "user.bin") == bytes(range(256)) * 40
    assert sorted(os.listxattr(b.path("x"))) == ["user.bin", "user.one"]  # control attributes not listed
    with pytest.raises(OSError) as e:
        os.setxattr(p, "user.one", b"again", os.XATTR_CREATE)
    assert e.value.errno == errno.EEXIST
    with pytest.raises(OSError) as e:
        os.setxattr(p, "user.none", b"x", os.XATTR_REPLACE)
    assert e.value.errno == errno.ENODATA
    os.removexattr(b.path("x"), "user.one")
    assert os.listxattr(p) == ["user.bin"]
    with pytest.raises(OSError) as e:
        os.getxattr(p, "user.one")
    assert e.value.errno == errno.ENODATA
    # The control attributes stay.
    assert os.getxattr(p, "user.rustfs.layout") == b"ec:4+2"
    assert b"client.app_reads" in os.getxattr(c.mnt, "user.rustfs.stats")
    # Files keep their attributes through a copy with cp -a.
    run(["cp", "-a", p, c.path("x.copy")])
    assert os.getxattr(c.path("x.copy"), "user.bin") == bytes(range(256)) * 40


LOCKER = r"""
import fcntl, os, sys, time
path, kind, hold = sys.argv[1], sys.argv[2], float(sys.argv[3])
fd = os.open(path, os.O_RDWR)
if kind == "fcntl":
    fcntl.lockf(fd, fcntl.LOCK_EX, 100, 0)
else:
    fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(hold)
"""


def getlk(fd, start, length):
    """F_GETLK for a write lock: (type, pid) of a lock in the way."""
    req = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, start, length, 0)
    rep = fcntl.fcntl(fd, fcntl.F_GETLK, req)
    t, _, _, _, pid = struct.unpack("hhqqi", rep)
    return t, pid


@pytest.mark.parametrize("kind", ["fcntl", "flock"])
def test_locks_between_processes_and_mounts(two_clients, kind):
    c, b = two_clients
    with open(c.path("lock"), "wb") as f:
        f.write(bytes(4096))
    holder = subprocess.Popen([sys.executable, "-c", LOCKER, c.path("lock"), kind, "3"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        for path in (c.path("lock"), b.path("lock")):  # another process, same mount or not
            fd = os.open(path, os.O_RDWR)
            try:
                with pytest.raises(OSError) as e:
                    if kind == "fcntl":
                        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 50)
                    else:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                assert e.value.errno in (errno.EAGAIN, errno.EACCES)
                if kind == "fcntl":
                    assert getlk(fd, 0, 0) == (fcntl.F_WRLCK, holder.pid)
                    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 200)  # beyond the held range
                    fcntl.lockf(fd, fcntl.LOCK_UN, 10, 200)
            finally:
                os.close(fd)
        # A blocking request waits for the holder's exit (which releases it).
        fd = os.open(b.path("lock"), os.O_RDWR)
        t0 = time.time()
        if kind == "fcntl":
            fcntl.lockf(fd, fcntl.LOCK_EX, 100, 0)
        else:
            fcntl.flock(fd, fcntl.LOCK_EX)
        waited = time.time() - t0
        os.close(fd)
        assert holder.wait(timeout=30) == 0
        assert waited > 0.5, waited
    finally:
        holder.kill()
        holder.wait()


def test_locks_of_a_dead_client_end_with_its_lease(quick):
    c, b = quick
    with open(c.path("lk"), "wb") as f:
        f.write(b"x")
    holder = subprocess.Popen([sys.executable, "-c", LOCKER, b.path("lk"), "fcntl", "300"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        fd = os.open(c.path("lk"), os.O_RDWR)
        with pytest.raises(OSError):
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        os.kill(b.proc.pid, signal.SIGKILL)  # B's client dies holding the lock
        t0 = time.time()
        fcntl.lockf(fd, fcntl.LOCK_EX, 1, 0)  # granted once B's lease runs out
        assert time.time() - t0 < 20
        os.close(fd)
    finally:
        holder.kill()
        holder.wait()


SQLITE_WORKER = r"""
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=60, isolation_level=None)
for i in range(int(sys.argv[2])):
    db.execute("BEGIN IMMEDIATE")
    (v,) = db.execute("SELECT v FROM counter WHERE id = 1").fetchone()
    db.execute("UPDATE counter SET v = ? WHERE id = 1", (v + 1,))
    db.execute("INSERT INTO log (who) VALUES (?)", (sys.argv[3],))
    db.execute("COMMIT")
"""


def test_sqlite_from_two_mounts_at_once(two_clients):
    c, b = two_clients
    db = sqlite3.connect(c.path("app.db"))
    db.executescript("CREATE TABLE counter (id INTEGER PRIMARY KEY, v INTEGER);"
                     "INSERT INTO counter VALUES (1, 0);"
                     "CREATE TABLE log (n INTEGER PRIMARY KEY, who TEXT);")
    db.close()
    n = 150
    procs = [subprocess.Popen([sys.executable, "-c", SQLITE_WORKER, m.path("app.db"), str(n), name],
                              stderr=subprocess.PIPE, text=True)
             for m, name in ((c, "a"), (b, "b"), (c, "a2"))]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    for path in (c.path("app.db"), b.path("app.db")):
        db = sqlite3.connect(path)
        assert db.execute("SELECT v FROM counter").fetchone()[0] == 3 * n
        assert db.execute("SELECT count(*) FROM log").fetchone()[0] == 3 * n
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        db.close()


# --- 5. Ownership, permissions and times -------------------------------------

def as_user(uid, gid, code, *args):
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                           sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)


def test_ownership_setgid_sticky_and_suid(cluster):
    c = cluster
    os.chmod(os.path.dirname(c.mnt), 0o755)  # the test's temporary folder: let others through
    os.chmod(c.mnt, 0o777)
    r = as_user(1000, 1001, "import os,sys; open(sys.argv[1],'w').write('mine'); os.mkdir(sys.argv[2])",
                c.path("by1000"), c.path("dir1000"))
    assert r.returncode == 0, r.stderr
    st = os.stat(c.path("by1000"))
    assert (st.st_uid, st.st_gid) == (1000, 1001)
    assert (os.stat(c.path("dir1000")).st_uid, os.stat(c.path("dir1000")).st_gid) == (1000, 1001)
    # A setgid directory passes its group (and, to directories, the bit) down.
    os.mkdir(c.path("sg"))
    os.chown(c.path("sg"), 0, 4242)
    os.chmod(c.path("sg"), 0o2777)
    r = as_user(1000, 1001, "import os,sys; open(sys.argv[1]+'/f','w'); os.mkdir(sys.argv[1]+'/d')", c.path("sg"))
    assert r.returncode == 0, r.stderr
    assert os.stat(c.path("sg", "f")).st_gid == 4242
    assert os.stat(c.path("sg", "d")).st_gid == 4242 and os.stat(c.path("sg", "d")).st_mode & 0o2000
    # Sticky directory: only the owner (or root) removes a file.
    os.mkdir(c.path("tmp"))
    os.chmod(c.path("tmp"), 0o1777)
    r = as_user(1000, 1000, "open(__import__('sys').argv[1],'w')", c.path("tmp", "owned"))
    assert r.returncode == 0, r.stderr
    r = as_user(1002, 1002, "import os,sys; os.unlink(sys.argv[1])", c.path("tmp", "owned"))
    assert r.returncode != 0 and "PermissionError" in r.stderr
    assert os.path.exists(c.path("tmp", "owned"))
    # A write by an unprivileged owner clears SUID/SGID, as ext4 does.
    p = c.path("suid_prog")
    with open(p, "w") as f:
        f.write("#!/bin/sh\n")
    os.chown(p, 1000, 1000)
    os.chmod(p, 0o6755)
    r = as_user(1000, 1000, "open(__import__('sys').argv[1],'a').write('echo\\n')", p)
    assert r.returncode == 0, r.stderr
    assert os.stat(p).st_mode & 0o7777 == 0o755


def test_times_follow_ext4(cluster):
    c = cluster
    p = c.path("t")
    with open(p, "w") as f:
        f.write("x")
    st0 = os.stat(p)
    time.sleep(0.05)
    os.rename(p, c.path("t2"))  # rename changes the moved inode's ctime (ext4)
    st1 = os.stat(c.path("t2"))
    assert st1.st_ctime_ns > st0.st_ctime_ns and st1.st_mtime_ns == st0.st_mtime_ns
    time.sleep(0.05)
    os.link(c.path("t2"), c.path("t3"))  # link too
    st2 = os.stat(c.path("t2"))
    assert st2.st_ctime_ns > st1.st_ctime_ns
    dir_before = os.stat(c.mnt).st_mtime_ns
    time.sleep(0.05)
    os.unlink(c.path("t3"))
    assert os.stat(c.mnt).st_mtime_ns > dir_before
    time.sleep(0.05)
    with open(c.path("t2"), "a") as f:  # a write moves mtime and ctime before close
        f.write("y")
        f.flush()
        st3 = os.stat(c.path("t2"))
        assert st3.st_mtime_ns > st2.st_mtime_ns and st3.st_ctime_ns >= st3.st_mtime_ns


# --- 7. Review findings -------------------------------------------------------

def test_truncate_uses_fresh_state(two_clients):
    c, b = two_clients
    open(c.path("f"), "wb").close()  # A opens and closes an empty f
    with open(b.path("f"), "wb") as f:  # B writes 8 KiB
        f.write(b"\xff" * 8192)
    subprocess.run(["truncate", "-s", "100", c.path("f")], check=True)
    subprocess.run(["truncate", "-s", "8192", c.path("f")], check=True)
    data = read_all(b.path("f"))
    assert data == b"\xff" * 100 + bytes(8092)


def test_layout_change_with_buffered_writes_elsewhere(two_clients):
    c, b = two_clients
    data = os.urandom(MiB)
    fd = os.open(c.path("lay"), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.write(fd, data)  # buffered in A, the file looks empty to the MDS
        with pytest.raises(OSError) as e:  # B's change first makes A publish: then it has data
            os.setxattr(b.path("lay"), "user.rustfs.layout", b"replica:2")
        assert e.value.errno == errno.EINVAL
        os.write(fd, b"more")
    finally:
        os.close(fd)
    assert read_all(b.path("lay")) == data + b"more"
    assert os.getxattr(b.path("lay"), "user.rustfs.layout") == b"ec:4+2"


def test_lapsed_lease_drops_cached_data(quick):
    c, b = quick
    v1, v2 = os.urandom(2 * MiB), os.urandom(2 * MiB)
    with open(c.path("lapse"), "wb") as f:
        f.write(v1)
    fd = os.open(b.path("lapse"), os.O_RDONLY)
    try:
        assert os.pread(fd, len(v1), 0) == v1  # B caches v1 (fragment cache, kernel pages)
        assert read_all(b.path("lapse")) == v1
        os.kill(b.proc.pid, signal.SIGSTOP)
        try:
            time.sleep(3)  # past B's 2 s lease
            with open(c.path("lapse"), "r+b") as f:  # the MDS waits B's lease out, then commits
                f.write(v2)
        finally:
            os.kill(b.proc.pid, signal.SIGCONT)
        assert read_all(b.path("lapse")) == v2
        assert os.pread(fd, len(v2), 0) == v2
    finally:
        os.close(fd)
    assert b.stats().get("client.lease_lapses", 0) >= 1


def test_stopped_client_never_breaks_a_writer(two_clients):
    # Default timeouts (lease 10 s, RPC 5 s): A stopped for 14 s, B writes.
    c, b = two_clients
    v1, v2 = os.urandom(MiB), os.urandom(MiB)
    with open(b.path("w"), "wb") as f:
        f.write(v1)
    assert read_all(c.path("w")) == v1  # A holds leases on w
    pid = c.pid("fuse")
    os.kill(pid, signal.SIGSTOP)
    resumer = threading.Timer(14, os.kill, (pid, signal.SIGCONT))
    resumer.start()
    try:
        fd = os.open(b.path("w"), os.O_WRONLY)
        os.write(fd, v2)
        os.fsync(fd)  # the commit waits out A's lease: it succeeds, and says so
        os.close(fd)
        assert read_all(b.path("w")) == v2
        for _ in range(3):
            time.sleep(1)
            assert read_all(b.path("w")) == v2
    finally:
        resumer.join()
        os.kill(pid, signal.SIGCONT)
    assert read_all(c.path("w")) == v2
