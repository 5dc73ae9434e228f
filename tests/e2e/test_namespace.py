"""POSIX namespace operations through the mount, as tools use them."""
import errno
import os
import stat
import subprocess

import pytest


def test_create_mkdir_readdir_rename_unlink_rmdir(shared_cluster):
    base = shared_cluster.path("ns")
    os.mkdir(base)
    os.makedirs(os.path.join(base, "a", "b"))
    for i in range(300):  # more than one readdir page of the kernel
        with open(os.path.join(base, "a", f"file{i:03d}"), "w") as f:
            f.write(str(i))
    names = sorted(os.listdir(os.path.join(base, "a")))
    assert names == sorted(["b"] + [f"file{i:03d}" for i in range(300)])
    os.rename(os.path.join(base, "a", "file007"), os.path.join(base, "a", "b", "seven"))
    with open(os.path.join(base, "a", "b", "seven")) as f:
        assert f.read() == "7"
    # rename over an existing file replaces it
    os.rename(os.path.join(base, "a", "file008"), os.path.join(base, "a", "file009"))
    with open(os.path.join(base, "a", "file009")) as f:
        assert f.read() == "8"
    # directory rename, and a directory cannot move into itself
    os.rename(os.path.join(base, "a", "b"), os.path.join(base, "b2"))
    assert os.listdir(os.path.join(base, "b2")) == ["seven"]
    with pytest.raises(OSError) as e:
        os.rename(os.path.join(base, "a"), os.path.join(base, "a", "inside"))
    assert e.value.errno == errno.EINVAL
    with pytest.raises(OSError) as e:
        os.rmdir(os.path.join(base, "b2"))
    assert e.value.errno == errno.ENOTEMPTY
    os.unlink(os.path.join(base, "b2", "seven"))
    os.rmdir(os.path.join(base, "b2"))
    assert not os.path.exists(os.path.join(base, "b2"))
    with pytest.raises(FileNotFoundError):
        open(os.path.join(base, "nope"))
    with pytest.raises(OSError) as e:
        os.unlink(os.path.join(base, "a"))
    assert e.value.errno in (errno.EISDIR, errno.EPERM)
    with pytest.raises(FileExistsError):
        os.mkdir(os.path.join(base, "a"))
    with pytest.raises(FileExistsError):
        os.open(os.path.join(base, "a", "file001"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    subprocess.run(["rm", "-rf", base], check=True)
    assert not os.path.exists(base)


def test_chmod_chown_utimens_and_stat(shared_cluster):
    p = shared_cluster.path("attrs")
    with open(p, "w") as f:
        f.write("hello")
    os.chmod(p, 0o600)
    os.chown(p, 1234, 5678)
    os.utime(p, ns=(1_600_000_000_123_456_789, 1_500_000_000_987_654_321))
    st = os.stat(p)
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert stat.S_ISREG(st.st_mode)
    assert (st.st_uid, st.st_gid) == (1234, 5678)
    assert st.st_mtime_ns == 1_500_000_000_987_654_321
    assert st.st_atime_ns == 1_600_000_000_123_456_789
    assert st.st_size == 5
    d = os.stat(shared_cluster.path())
    assert stat.S_ISDIR(d.st_mode)


def test_statfs_reports_space(shared_cluster):
    v = os.statvfs(shared_cluster.path())
    assert v.f_blocks > 0 and v.f_bavail > 0
    assert v.f_namemax == 255


def test_names_are_validated(shared_cluster):
    with pytest.raises(OSError) as e:
        open(shared_cluster.path("x" * 256), "w")
    assert e.value.errno == errno.ENAMETOOLONG  # the kernel refuses first
