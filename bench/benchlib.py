"""What the read benchmarks share: a cluster whose RAM tiers can be sized or
turned off, data sets written once, fio runs measured from outside
(IOPS and latency from fio; bytes read by the disk device from
/sys/block/*/stat; CPU time of every process from /proc and rusage; cache hit
rates from the rustfs counters), and the table they print.

A cold row is one no RAM tier of ours served: the client's fragment cache and
the DSS hot tiers are off (or the data set is several times their size, and
the hit rates beside the row say so), and the page cache is dropped first.
"""
import json
import os
import resource
import shlex
import shutil
import subprocess
import time
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLK_TCK = os.sysconf("SC_CLK_TCK")
COMMANDS = []  # every command that produced a figure, printed at the end
FUSE_EXAMPLES = "/usr/share/doc/libfuse3-dev/examples"


def q(cmd, env=None):
    pre = "".join(f"{k}={shlex.quote(v)} " for k, v in (env or {}).items())
    return pre + " ".join(shlex.quote(str(c)) for c in cmd)


def run(cmd, env=None, record=True, **kw):
    if record:
        COMMANDS.append(q(cmd, env))
    full_env = dict(os.environ, **env) if env else None
    return subprocess.run([str(c) for c in cmd], check=True, env=full_env, **kw)


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def fill(path, size):
    """Writes `size` random bytes to path (kept if already that size)."""
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    print(f"writing {size >> 20} MiB of random data to {path}", flush=True)
    run(["dd", "if=/dev/urandom", f"of={path}", "bs=4M", f"count={size}", "iflag=count_bytes",
         "conv=fsync", "status=none"])


# --- measurements from outside the processes ---------------------------------

def device_of(path):
    """The whole-disk block device (e.g. 'vda') holding path."""
    st = os.stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    sys = os.path.realpath(f"/sys/dev/block/{major}:{minor}")
    # A partition's sysfs node sits inside its disk's.
    if os.path.exists(os.path.join(sys, "partition")):
        sys = os.path.dirname(sys)
    return os.path.basename(sys)


def device_read_bytes(dev):
    with open(f"/sys/block/{dev}/stat") as f:
        return int(f.read().split()[2]) * 512  # sectors read


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, ValueError):
            pass
    return total / CLK_TCK


def children_cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# --- a cluster the benchmark owns ---------------------------------------------

def parse_settings(texts):
    """{(section, key): value} from "SECTION.KEY=VALUE" texts (the value as
    TOML), for BenchCluster.start. ValueError names a text of another shape."""
    settings = {}
    for kv in texts:
        key, _, value = kv.partition("=")
        section, _, name = key.partition(".")
        if not value or not name:
            raise ValueError(f"'{kv}': want SECTION.KEY=VALUE")
        settings[(section, name)] = value
    return settings


class BenchCluster:
    """A local cluster in `root` whose RAM tiers are sized (or turned off)
    by the benchmark, restarted between phases with its data kept."""

    def __init__(self, root, rustfs, port, client_cache, hot_tier):
        self.root, self.rustfs, self.port = root, rustfs, port
        self.dir, self.mnt = os.path.join(root, "cluster"), os.path.join(root, "mnt")
        self.client_cache, self.hot_tier = client_cache, hot_tier
        run([rustfs, "cluster", "up", "--dir", self.dir, "--port", port, "--config-only"],
            capture_output=True)
        self.config = os.path.join(self.dir, "rustfs.toml")
        self.tiers = None

    def start(self, tiers, settings=None):
        """(Re)starts every process with the RAM tiers on or off, and
        `settings` ({(section, key): value as TOML text}) set."""
        settings = dict(settings or {})
        self.stop()  # a cluster left running by an earlier run takes the new config too
        with open(self.config) as f:
            lines = f.read().splitlines()
        section, out = "", []
        for line in lines:
            if line.startswith("["):
                section = line.strip("[]")
            key = line.split("=")[0].strip()
            if section in ("fragment_cache", "dss_hot_tier") and key == "enabled":
                line = f"enabled = {'true' if tiers else 'false'}"
            elif section == "fragment_cache" and key == "capacity":
                line = f'capacity = "{self.client_cache >> 20}MiB"'
            elif section == "dss_hot_tier" and key == "capacity":
                line = f'capacity = "{self.hot_tier >> 20}MiB"'
            if (section, key) in settings:
                line = f"{key} = {settings.pop((section, key))}"
            out.append(line)
        if settings:
            raise KeyError(f"not in {self.config}: {sorted(settings)}")
        with open(self.config, "w") as f:
            f.write("\n".join(out) + "\n")
        run([self.rustfs, "cluster", "up", "--dir", self.dir, "--mount", self.mnt], capture_output=True)
        self.tiers = tiers

    def stop(self):
        subprocess.run([self.rustfs, "cluster", "down", "--dir", self.dir], capture_output=True)

    def pids(self):
        out = []
        pdir = os.path.join(self.dir, "pids")
        for name in os.listdir(pdir):
            try:
                out.append(int(open(os.path.join(pdir, name)).read()))
            except (OSError, ValueError):
                pass
        return out

    def stats(self):
        r = subprocess.run([self.rustfs, "stats", "--dir", self.dir, "--json"], check=True,
                           capture_output=True, text=True)
        return json.loads(r.stdout)


def machine_line(cluster=None):
    """Which machine a figure came from, in one line: its CPUs, kernel and
    cpuidle driver, and how the cluster's FUSE client waits for DSS replies
    (client.reply_wait; "auto" decides by the cost of a syscall, which
    differs 4x between the VMs this project has run on)."""
    def read(path, default="?"):
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError:
            return default
    parts = [f"{os.cpu_count()} CPUs", f"kernel {os.uname().release}",
             "cpuidle " + read("/sys/devices/system/cpu/cpuidle/current_driver", "none")]
    if cluster:
        with open(cluster.config, "rb") as f:
            mode = tomllib.load(f).get("client", {}).get("reply_wait", "auto")
        # "auto" logs what it measured and chose: the last start's line says it.
        said = [l[l.index("client.reply_wait"):]
                for l in read(os.path.join(cluster.dir, "logs", "fuse.log"), "").splitlines()
                if "client.reply_wait" in l]
        parts.append(said[-1] if mode == "auto" and said else f'client.reply_wait = "{mode}"')
    return "machine: " + ", ".join(parts)


def delta(after, before, proc, key):
    return after.get(proc, {}).get(key, 0) - before.get(proc, {}).get(key, 0)


def ratio(num, den):
    return num / den if den else float("nan")


# --- fio -------------------------------------------------------------------

def fill_files(folder, count, size):
    """`count` files f0 .. f<count-1> of random bytes, `size` in all (kept if
    already there at that size): the data set of many files (fio's
    --filename_format=f$filenum)."""
    os.makedirs(folder, exist_ok=True)
    each = size // count
    names = [os.path.join(folder, f"f{i}") for i in range(count)]
    if all(os.path.exists(n) and os.path.getsize(n) == each for n in names):
        return
    print(f"writing {count} files of {each >> 10} KiB of random data to {folder}", flush=True)
    COMMANDS.append(f"# {count} files f0..f{count - 1} of {each} random bytes each written to {folder} "
                    "(bench/benchlib.py fill_files)")
    for i, n in enumerate(names):
        with open(n, "wb") as f:
            f.write(os.urandom(each))
        if (i + 1) % 256 == 0:
            print(f"  {i + 1} of {count}", flush=True)
    run(["sync"])


def fio(name, path, size, rw_args, runtime, env=None):
    """One fio job group (4 KiB random reads); its figures. path: a file,
    or a folder filled by fill_files (each read picks one of its files at
    random)."""
    if os.path.isdir(path):
        count = len([n for n in os.listdir(path) if n.startswith("f")])
        target = [f"--directory={path}", f"--nrfiles={count}", f"--filesize={parse_size(str(size)) // count}",
                  "--filename_format=f$filenum", "--file_service_type=random"]
    else:
        target = [f"--filename={path}"]
    cmd = ["fio", f"--name={name}"] + target + ["--rw=randread", "--bs=4k",
           f"--size={size}", f"--runtime={runtime}", "--time_based", "--randrepeat=0",
           "--norandommap", "--group_reporting", "--output-format=json"] + list(rw_args)
    out = run(cmd, env=env, capture_output=True, text=True).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]
    r, pct = job["read"], job["read"]["clat_ns"]["percentile"]
    return {"iops": r["iops"], "ios": r["total_ios"], "bytes": r["io_bytes"], "errors": job["error"],
            "p50": pct["50.000000"] / 1000, "p99": pct["99.000000"] / 1000}


def measure(label, fn, dev, cluster=None, client_counters=None, warmup=None, daemons=()):
    """Runs fn() (returning fio figures) with the page cache dropped first,
    and adds device bytes per application byte, CPU µs per read (the
    cluster's processes and the benchmark's children, i.e. fio) and, for a
    rustfs row, hit rates and rustfs's own amplification counter.

    warmup (a short run of the same job, not measured) runs after the drop:
    dropping the page cache also drops every running program's code, which
    faults back in from the disk on the first reads and is not the reads'
    own cost. It reads a negligible share of a cold data set.

    daemons: PIDs of other processes serving the row (passthrough_ll) whose
    CPU time counts too."""
    drop_caches()
    if warmup:
        n = len(COMMANDS)
        warmup()
        del COMMANDS[n:]  # the same job, shorter: not a command that made a figure
    d0, c0 = device_read_bytes(dev), children_cpu_seconds()
    s0 = cluster.stats() if cluster else None
    pids = lambda: (cluster.pids() if cluster else []) + list(daemons)  # noqa: E731
    p0 = cpu_seconds(pids())
    r = fn()
    r["label"] = label
    d1, c1 = device_read_bytes(dev), children_cpu_seconds()
    ios = max(1, r["ios"])
    r["dev_amp"] = ratio(d1 - d0, r["bytes"])
    r["cpu_us"] = ((c1 - c0) + (cpu_seconds(pids()) - p0)) * 1e6 / ios
    if cluster:
        s1 = cluster.stats()
        client = client_counters() if client_counters else {k: delta(s1, s0, "client", k) for k in s1.get("client", {})}
        hits, misses = client.get("client.cache_page_hits", 0), client.get("client.cache_page_misses", 0)
        hot_h = delta(s1, s0, "dss-total", "dss.hot_tier.cache_page_hits")
        hot_m = delta(s1, s0, "dss-total", "dss.hot_tier.cache_page_misses")
        r["client_hit"] = ratio(hits, hits + misses) if cluster.tiers else None
        r["hot_hit"] = ratio(hot_h, hot_h + hot_m) if cluster.tiers else None
        r["own_amp"] = ratio(delta(s1, s0, "dss-total", "dss.disk_bytes_read"),
                             client.get("client.app_bytes_read", 0))
        r["hedged"] = client.get("client.hedged_reads", 0)
        r["rebuilt"] = client.get("client.reconstructions", 0)
    return r


class Rounds:
    """Rows measured over rounds, each beside its own round's local row: the
    host's speed swings between runs, so a ratio is taken within a round."""

    def __init__(self):
        self.by_label = {}  # label -> [(row, its round's local row or None)], in order of first seen

    def add(self, row, local):
        self.by_label.setdefault(row["label"], []).append((row, local))

    def medians(self):
        """(rows, ceilings) for print_table: each label's median round (by
        ratio to its local row; a local row by IOPS), with the ratios'
        range over the rounds in row["ratio_range"] when there were several."""
        rows, ceilings = [], {}
        for label, runs in self.by_label.items():
            key = (lambda rl: rl[0]["iops"]) if runs[0][1] is None else (lambda rl: ratio(rl[0]["iops"], rl[1]["iops"]))
            ordered = sorted(runs, key=key)
            row, local = ordered[(len(ordered) - 1) // 2]  # the lower median: a round that happened
            if len(runs) > 1 and local is not None:
                row = dict(row, ratio_range=(key(ordered[0]), key(ordered[-1])))
            rows.append(row)
            if local is not None:
                ceilings[label] = local
        return rows, ceilings


def print_table(title, rows, ceilings):
    """rows: measure() results; ceilings: label -> the local row it is compared to."""
    print(f"\n{title}")
    print(f"{'row':<38}{'IOPS':>9}{'p50 us':>9}{'p99 us':>9}{'ratio':>7}{'dev/app':>9}{'ours':>7}"
          f"{'CPU us':>8}{'client hit':>11}{'hot hit':>9}{'hedged':>8}{'rebuilt':>8}")

    def pct(v):
        return "off" if v is None else f"{v:.1%}"

    for r in rows:
        base = ceilings.get(r["label"])
        line = (f"{r['label']:<38}{r['iops']:>9.0f}{r['p50']:>9.1f}{r['p99']:>9.1f}"
                f"{ratio(r['iops'], base['iops']) if base else 1.0:>7.2f}{r['dev_amp']:>9.2f}")
        if "own_amp" in r:
            line += (f"{r['own_amp']:>7.2f}{r['cpu_us']:>8.1f}{pct(r['client_hit']):>11}{pct(r['hot_hit']):>9}"
                     f"{r['hedged']:>8}{r['rebuilt']:>8}")
        else:
            line += f"{'-':>7}{r['cpu_us']:>8.1f}{'-':>11}{'-':>9}{'-':>8}{'-':>8}"
        if "ratio_range" in r:
            line += f"  ratio {r['ratio_range'][0]:.2f}-{r['ratio_range'][1]:.2f}"
        print(line + ("  ERRORS" if r["errors"] else ""))


# --- libfuse's passthrough_ll: what any FUSE file system can reach here ------

def build_passthrough_ll(tmp, keep_direct):
    """Compiles libfuse's passthrough_ll example (libfuse3-dev) into tmp;
    returns (binary, None) or (None, why). fio's O_DIRECT reaches the daemon
    in the open flags: keep_direct passes it on to the backing file (the
    disk serves: a cold ceiling), else it is dropped there (the backing
    file's page cache serves: a cached ceiling)."""
    src = os.path.join(FUSE_EXAMPLES, "passthrough_ll.c")
    if not os.path.exists(src):
        return None, f"{src} not found (package libfuse3-dev)"
    d = os.path.join(tmp, "passthrough_ll")
    os.makedirs(d, exist_ok=True)
    text = open(src).read()
    for line in text.splitlines():  # the examples' own helper headers
        if line.startswith('#include "'):
            h = line.split('"')[1]
            if not os.path.exists(os.path.join(FUSE_EXAMPLES, h)):
                return None, f"{h}, included by passthrough_ll.c, is not in {FUSE_EXAMPLES}"
            shutil.copy(os.path.join(FUSE_EXAMPLES, h), d)
    old = "fd = open(buf, fi->flags & ~O_NOFOLLOW);"
    if old not in text:
        return None, "passthrough_ll.c's lo_open changed: cannot choose O_DIRECT on the backing file"
    if not keep_direct:
        text = text.replace(old, "fd = open(buf, fi->flags & ~(O_NOFOLLOW | O_DIRECT));")
    open(os.path.join(d, "passthrough_ll.c"), "w").write(text)
    exe = os.path.join(d, "passthrough_ll")
    try:
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], check=True,
                               capture_output=True, text=True).stdout.split()
        r = subprocess.run(["gcc", "-O2", "-Wall", os.path.join(d, "passthrough_ll.c"), "-o", exe] + flags,
                           capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        return None, f"cannot build: {e}"
    if r.returncode != 0:
        return None, "gcc failed: " + r.stderr.strip()[-500:]
    COMMANDS.append("gcc -O2 -Wall passthrough_ll.c -o passthrough_ll $(pkg-config --cflags --libs fuse3)"
                    + ("" if keep_direct else "  # O_DIRECT dropped on the backing open"))
    return exe, None


def is_mounted(path):
    path = os.path.abspath(path)
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f)


class Passthrough:
    """passthrough_ll mounting `source` on `mnt` (clone_fd, plus `options`)
    until close(). preexec_fn runs in the daemon before it starts (e.g. to
    raise its file limit). RuntimeError, with the daemon's stderr, if it
    does not mount within 10 s."""

    def __init__(self, exe, source, mnt, options="", preexec_fn=None):
        os.makedirs(mnt, exist_ok=True)
        self.mnt = mnt
        self.cmd = [exe, "-f", "-o", f"source={source},clone_fd" + (f",{options}" if options else ""), mnt]
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=preexec_fn)
        for _ in range(200):
            if is_mounted(mnt) or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not is_mounted(mnt):
            err = self.proc.stderr.read().strip() if self.proc.poll() is not None else "timed out"
            self.close()
            raise RuntimeError(f"passthrough_ll did not mount on {mnt}: {err}")

    def close(self):
        if is_mounted(self.mnt):
            subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
