"""A source tree for copy tests, and a comparison of two trees entry by entry
(type, mode, owner, size, times, bytes, symlink targets, hard-link groups)."""
import filecmp
import os
import random
import shutil
import stat

# Real trees: the kernel and C++ headers of this machine (a few thousand
# files, some symlinks), beside generated entries of every kind cp/rsync/tar
# must carry over.
REAL_DIRS = ["/usr/include/linux", "/usr/include/asm-generic", "/usr/include/x86_64-linux-gnu",
             "/usr/include/c++"]


def make_source_tree(root, seed=1):
    os.makedirs(root)
    for d in REAL_DIRS:
        if os.path.isdir(d):
            shutil.copytree(d, os.path.join(root, "real", d.strip("/").replace("/", "_")), symlinks=True)
    rnd = random.Random(seed)
    gen = os.path.join(root, "gen")
    os.makedirs(gen)
    for i in range(40):
        d = os.path.join(gen, "d%02d" % i)
        os.makedirs(d)
        for j in range(12):
            p = os.path.join(d, "f%02d" % j)
            with open(p, "wb") as f:
                f.write(rnd.randbytes(rnd.choice([0, 1, 100, 4096, 5000, 70000, 300000])))
            os.chmod(p, rnd.choice([0o600, 0o644, 0o640, 0o755, 0o700, 0o444]))
            os.utime(p, ns=(rnd.randrange(10**18, 16 * 10**17), rnd.randrange(10**18, 16 * 10**17)))
    # Owners other than root, and special modes.
    owned = os.path.join(gen, "owned")
    with open(owned, "w") as f:
        f.write("someone else's")
    os.chown(owned, 1234, 5678)
    suid = os.path.join(gen, "suid")
    with open(suid, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(suid, 0o4755)
    sgid_dir = os.path.join(gen, "sgid_dir")
    os.makedirs(sgid_dir)
    os.chmod(sgid_dir, 0o2775)
    os.chown(sgid_dir, 0, 4321)
    sticky = os.path.join(gen, "sticky")
    os.makedirs(sticky)
    os.chmod(sticky, 0o1777)
    # Symlinks: relative, absolute, dangling, to a directory, chains.
    os.symlink("d00/f01", os.path.join(gen, "rel_link"))
    os.symlink("/etc/hostname", os.path.join(gen, "abs_link"))
    os.symlink("does/not/exist", os.path.join(gen, "dangling"))
    os.symlink("d01", os.path.join(gen, "dir_link"))
    os.symlink("rel_link", os.path.join(gen, "chain"))
    # Hard links: within a directory and across directories.
    os.link(os.path.join(gen, "d02", "f03"), os.path.join(gen, "d02", "hard"))
    os.link(os.path.join(gen, "d02", "f03"), os.path.join(gen, "d03", "hard_elsewhere"))
    os.link(os.path.join(gen, "d04", "f05"), os.path.join(gen, "hard2"))
    # Sparse files: holes before, between and after data.
    sparse = os.path.join(gen, "sparse")
    with open(sparse, "wb") as f:
        f.seek(15 << 20)
        f.write(b"middle")
        f.seek(9 << 20)
        f.write(b"early")
        f.truncate(20 << 20)
    empty_big = os.path.join(gen, "all_hole")
    with open(empty_big, "wb") as f:
        f.truncate(6 << 20)
    os.mkfifo(os.path.join(gen, "fifo"))
    os.mknod(os.path.join(gen, "null_dev"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
    # Directory times last: making entries moved them.
    os.utime(os.path.join(gen, "d05"), ns=(1_200_000_000_123_456_789, 1_200_000_000_123_456_789))


def entries(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            out[os.path.relpath(p, root)] = os.lstat(p)
    return out


def assert_same_tree(src, dst, owners=True, mtime_resolution_ns=1, hard_links=True, dir_mtimes=True):
    """Every entry of src is in dst and nothing else, with the same type,
    mode, owner, size (files and symlinks), mtime, device number and bytes;
    with hard_links, hard links of src are hard links in dst. dir_mtimes
    False: directory mtimes are not compared (an rsync update renames its
    temp files into a directory after setting its time, on any file system)."""
    a, b = entries(src), entries(dst)
    assert sorted(a) == sorted(b), (set(a) ^ set(b))
    groups = {}
    for rel, sa in a.items():
        sb = b[rel]
        assert sa.st_mode == sb.st_mode, (rel, oct(sa.st_mode), oct(sb.st_mode))
        if owners:
            assert (sa.st_uid, sa.st_gid) == (sb.st_uid, sb.st_gid), rel
        if not stat.S_ISDIR(sa.st_mode):
            assert sa.st_size == sb.st_size, (rel, sa.st_size, sb.st_size)
        r = mtime_resolution_ns
        if dir_mtimes or not stat.S_ISDIR(sa.st_mode):
            assert sa.st_mtime_ns // r == sb.st_mtime_ns // r, (rel, sa.st_mtime_ns, sb.st_mtime_ns)
        if stat.S_ISCHR(sa.st_mode) or stat.S_ISBLK(sa.st_mode):
            assert sa.st_rdev == sb.st_rdev, rel
        if stat.S_ISLNK(sa.st_mode):
            assert os.readlink(os.path.join(src, rel)) == os.readlink(os.path.join(dst, rel)), rel
        elif stat.S_ISREG(sa.st_mode):
            assert filecmp.cmp(os.path.join(src, rel), os.path.join(dst, rel), shallow=False), rel
            if hard_links and sa.st_nlink > 1:
                groups.setdefault((sa.st_dev, sa.st_ino), []).append(rel)
    for names in groups.values():
        inos = {b[n].st_ino for n in names}
        assert len(inos) == 1, ("hard links split", names)
        assert b[names[0]].st_nlink == a[names[0]].st_nlink, names
    return len(a)
