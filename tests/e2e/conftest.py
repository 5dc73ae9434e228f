"""Fixtures for end-to-end tests: real rustfs processes on loopback, a real
FUSE mount, real fio. Every cluster a test starts is stopped (unmounted,
processes killed by PID) when the test ends, pass or fail."""
import hashlib
import hmac
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# RUSTFS_BUILD_DIR: test another build tree (default build/).
BIN = os.path.join(os.environ.get("RUSTFS_BUILD_DIR", os.path.join(ROOT, "build")), "bin")
RUSTFS = os.path.join(BIN, "rustfs")


def ephemeral_port_floor():
    """The lowest port the kernel hands out to outgoing connections."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port_block(n):
    """A base port such that base..base+n-1 are all free on 127.0.0.1, below
    the ephemeral range: a port in it can be taken by any outgoing
    connection (the daemons' own, to each other) between this check and the
    daemon's bind, and the cluster then does not come up."""
    top = min(ephemeral_port_floor(), 60000)
    for _ in range(200):
        base = random.randrange(10000, top - n)
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", p))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port block")


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        assert chunk, f"connection closed after {len(buf)} of {n} bytes"
        buf += chunk
    return buf


def drop_caches():
    """So reads reach the daemons instead of the kernel's page cache."""
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


class Cluster:
    def __init__(self, root, dss=6, k=4, m=2, before_start=None, lease_ms=None, config_edits=()):
        """config_edits: (old line, new line) replacements in the generated
        rustfs.toml (which lists every key with its value), applied before
        anything starts."""
        self.dir = os.path.join(root, "cluster")
        self.mnt = os.path.join(root, "mnt")
        self.ndss = dss
        self.port = free_port_block(dss + 1)
        self.args = ["--dss", str(dss), "--k", str(k), "--m", str(m), "--port", str(self.port)]
        if lease_ms:
            self.args += ["--lease-ms", str(lease_ms)]
        os.makedirs(self.dir, exist_ok=True)
        if config_edits:
            self.up(["--config-only"])
            toml = os.path.join(self.dir, "rustfs.toml")
            with open(toml) as f:
                text = f.read()
            for old, new in config_edits:
                assert old in text, f"{old!r} not in {toml}"
                text = text.replace(old, new)
            with open(toml, "w") as f:
                f.write(text)
        if before_start:
            before_start(self)
        try:
            self.up()
        except BaseException:
            self.down()  # what did start (the test's fixture never gets the cluster to stop)
            raise

    def up(self, extra=()):
        """Starts whatever is not running (also restarts killed daemons)."""
        r = subprocess.run([RUSTFS, "cluster", "up", "--dir", self.dir, "--mount", self.mnt] + self.args + list(extra),
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr

    def down(self):
        subprocess.run([RUSTFS, "cluster", "down", "--dir", self.dir], capture_output=True, timeout=60)

    def pid(self, name):
        with open(os.path.join(self.dir, "pids", name + ".pid")) as f:
            return int(f.read())

    def kill(self, name, sig=signal.SIGKILL):
        pid = self.pid(name)
        os.kill(pid, sig)
        if sig == signal.SIGKILL:
            for _ in range(500):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return
                # Reap it if it is our grandchild's orphan: it is not; just wait.
                time.sleep(0.01)

    def stats(self):
        r = subprocess.run([RUSTFS, "stats", "--dir", self.dir, "--json"], capture_output=True,
                           text=True, timeout=30, check=True)
        return json.loads(r.stdout)

    def path(self, *parts):
        return os.path.join(self.mnt, *parts)

    def connect(self, addr, key=True):
        """A TCP connection to a server of the cluster with the cluster-key
        hello (net/auth.h) sent, unless key is False. The server's proof
        comes back ahead of the first reply: read it with read_proof."""
        sock = socket.create_connection(addr, timeout=10)
        if key:
            sock.sendall(self.hello()[0])
        return sock

    def hello(self, key=None):
        """A client hello and the proof the server owes for it."""
        if key is None:
            with open(os.path.join(self.dir, "cluster.key")) as f:
                key = f.read().strip().encode()
        nt = os.urandom(32) + struct.pack("<q", int(time.time() * 1000))
        return (b"RFSC" + nt + hmac.new(key, b"rustfs-client" + nt, hashlib.sha256).digest(),
                hmac.new(key, b"rustfs-server" + nt, hashlib.sha256).digest())

    def dss_addr(self, i):
        return ("127.0.0.1", self.port + 1 + i)

    def log(self, name):
        with open(os.path.join(self.dir, "logs", name + ".log")) as f:
            return f.read()


class SecondMount:
    """Another client process (its own rustfs-fuse) mounting the same cluster."""

    def __init__(self, cluster, root):
        self.mnt = os.path.join(root, "mnt2")
        os.makedirs(self.mnt, exist_ok=True)
        self.log = open(os.path.join(root, "fuse2.log"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(BIN, "rustfs-fuse"), "--config", os.path.join(cluster.dir, "rustfs.toml"),
             "--mount", self.mnt], stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(200):
            if os.path.ismount(self.mnt):
                return
            assert self.proc.poll() is None, open(self.log.name).read()
            time.sleep(0.05)
        raise RuntimeError("second mount did not come up")

    def path(self, *parts):
        return os.path.join(self.mnt, *parts)

    def stats(self):
        return json.loads(os.getxattr(self.mnt, "user.rustfs.stats"))

    def close(self):
        if self.proc.poll() is None:
            subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True, timeout=60)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        # A daemon a test killed (or one the unmount above found busy)
        # leaves its mount behind: detach it.
        subprocess.run(["fusermount3", "-u", "-z", self.mnt], capture_output=True, timeout=60)
        if not self.log.closed:
            self.log.close()


def two_mounts(tmp_root, **cluster_args):
    """Yields (cluster, second mount): a cluster mounted twice, by two
    separate client processes; both stopped afterwards."""
    c = Cluster(tmp_root, **cluster_args)
    m2 = None
    try:
        m2 = SecondMount(c, tmp_root)
        yield c, m2
    finally:
        try:
            if m2:
                m2.close()
        finally:
            c.down()


@pytest.fixture
def two_clients(tmp_root):
    """A cluster mounted twice, by two separate client processes."""
    yield from two_mounts(tmp_root)


def counter(stats, proc, name):
    return stats.get(proc, {}).get(name, 0)


# A hung test must fail, with what it hung on, instead of holding the whole
# run until CI's limit. No test here needs more than a few minutes; tests
# that legitimately take longer say so with @pytest.mark.timeout_s(N).
TEST_TIMEOUT_S = int(os.environ.get("RUSTFS_TEST_TIMEOUT_S", "420"))


def hang_diagnostics():
    """Kernel and user stacks of every rustfs process and of this test."""
    out = []
    pids = subprocess.run(["pgrep", "-f", "rustfs"], capture_output=True, text=True).stdout.split()
    for pid in pids + [str(os.getpid())]:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            out.append(f"== pid {pid}: {cmdline}")
            for tid in sorted(os.listdir(f"/proc/{pid}/task")):
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    comm = f.read().strip()
                with open(f"/proc/{pid}/task/{tid}/stack") as f:
                    kstack = f.read().strip()
                out.append(f"-- tid {tid} ({comm}) kernel stack:\n{kstack}")
        except OSError:
            continue
        if pid != str(os.getpid()) and shutil.which("gdb"):
            try:
                r = subprocess.run(["gdb", "-p", pid, "-batch", "-ex", "thread apply all bt"],
                                   capture_output=True, text=True, timeout=60)
                out.append(r.stdout[-20000:])
            except subprocess.TimeoutExpired:
                out.append("(gdb did not attach within 60 s)")
    dmesg = subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines()
    out.append("== kernel log (last 60 lines):\n" + "\n".join(dmesg[-60:]))
    return "\n".join(out)


# Folders the tests of this run made (mounts under them are ours to abort).
OUR_ROOTS = []


def abort_our_fuse_connections():
    """Fails every request our hung mounts hold (the blocked system calls
    return ENOTCONN), so the test errors out and its fixtures clean up.
    The connection's number is the minor device number of the mount."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            dev, mnt = fields[2], fields[4]
            if not any(mnt.startswith(r + "/") for r in OUR_ROOTS):
                continue
            try:
                with open(f"/sys/fs/fuse/connections/{dev.split(':')[1]}/abort", "w") as a:
                    a.write("1")
            except OSError:
                pass


def pytest_configure(config):
    config.addinivalue_line("markers", "timeout_s(n): this test's hang limit in seconds")


@pytest.fixture(autouse=True)
def hang_watchdog(request):
    import threading
    marker = request.node.get_closest_marker("timeout_s")
    limit = marker.args[0] if marker else TEST_TIMEOUT_S
    fired = []

    def fire():
        fired.append(hang_diagnostics())
        abort_our_fuse_connections()
    t = threading.Timer(limit, fire)
    t.daemon = True
    t.start()
    yield
    t.cancel()
    assert not fired, f"{request.node.nodeid} hung for {limit} s; stacks:\n{fired[0]}"


@pytest.fixture
def tmp_root():
    d = tempfile.mkdtemp(prefix="rustfs-e2e-")
    OUR_ROOTS.append(d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def cluster(tmp_root):
    c = Cluster(tmp_root)
    try:
        yield c
    finally:
        c.down()


@pytest.fixture(scope="module")
def shared_cluster():
    """One cluster for the tests of a module that do not break it."""
    d = tempfile.mkdtemp(prefix="rustfs-e2e-")
    OUR_ROOTS.append(d)
    c = Cluster(d)
    try:
        yield c
    finally:
        c.down()
        shutil.rmtree(d, ignore_errors=True)


def random_file(path, size, seed):
    rnd = random.Random(seed)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 1 << 20)
            f.write(rnd.randbytes(n))
            left -= n


def flip_slot_bytes(cluster, dss):
    """Flips one byte in the second 4 KiB block of every slot of DSS `dss`'s
    data files ("<n>-<slot bytes>x<slots>.dat"), whichever slots hold
    shards. Returns how many bytes it flipped."""
    slots_dir = os.path.join(cluster.dir, f"dss-{dss}", "slots")
    flipped = 0
    for name in os.listdir(slots_dir):
        slot_bytes, slots = (int(x) for x in name.split("-")[1].split(".")[0].split("x"))
        with open(os.path.join(slots_dir, name), "r+b") as f:
            for slot in range(slots):
                f.seek(slot * slot_bytes + 4096 + 1234)
                b = f.read(1)
                f.seek(slot * slot_bytes + 4096 + 1234)
                f.write(bytes([b[0] ^ 0x5A]))
                flipped += 1
    return flipped


def files_equal(a, b):
    return subprocess.run(["cmp", a, b]).returncode == 0
