// rustfs: the command-line tool.
//   rustfs cluster up   --dir DIR [--dss 6] [--mount MNT] ...  start (or restart) a local cluster
//   rustfs cluster down --dir DIR                              unmount and stop it, by PID
//   rustfs stats        --dir DIR [--json]                     counters of every process
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "client/mds_client.h"
#include "common/config.h"
#include "net/auth.h"
#include "net/rpc_channel.h"

extern char** environ;

namespace fs = std::filesystem;
using namespace rustfs;

namespace {

constexpr const char* kStatsXattr = "user.rustfs.stats";

std::string SelfDir() { return fs::read_symlink("/proc/self/exe").parent_path(); }

std::string ConfigPath(const std::string& dir) { return dir + "/rustfs.toml"; }

// The cluster's config, with its key in use for the connections to come.
Result<Config> LoadClusterConfig(const std::string& dir) {
  auto cfg = LoadConfigFile(ConfigPath(fs::absolute(dir)));
  if (!cfg) return cfg;
  RUSTFS_RETURN_ERR(net::UseClusterKey(cfg->cluster.key_file));
  return cfg;
}

std::string PidPath(const std::string& dir, const std::string& name) {
  return dir + "/pids/" + name + ".pid";
}

pid_t ReadPid(const std::string& path) {
  std::ifstream f(path);
  pid_t p = 0;
  f >> p;
  return p;
}

// Running, as opposed to never started, gone, or exited and not yet reaped
// (a zombie: kill() still finds it). An orphaned daemon is reaped by
// whoever adopts it, and a container's init may never do it: taking its
// zombie for a running daemon, `up` would not start a new one.
bool Alive(pid_t p) {
  if (p <= 0 || kill(p, 0) != 0) return false;
  std::ifstream f("/proc/" + std::to_string(p) + "/stat");
  std::string stat;
  std::getline(f, stat);
  // "pid (comm) S ...": the state follows the last ')' (comm may hold one).
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return true;  // no /proc: trust kill()
  const char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

// Starts `argv` in its own session with stdout/stderr to `log`, records its
// PID in `pidfile`, and returns the PID.
Result<pid_t> Spawn(std::vector<std::string> argv, const std::string& log,
                    const std::string& pidfile) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Err(Status::FromErrno(rc, "start " + argv[0]));
  std::ofstream(pidfile) << pid << "\n";
  return pid;
}

// Waits for `ok` up to `timeout`, failing early if `pid` exits.
bool WaitFor(const std::function<bool()>& ok, pid_t pid, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (ok()) return true;
    if (pid > 0) {
      int st;
      if (waitpid(pid, &st, WNOHANG) == pid) return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return ok();
}

bool IsMounted(const std::string& mnt) {
  std::ifstream f("/proc/self/mounts");
  std::string dev, path, rest;
  // Lexical only: stat()ing a mount whose cluster is down would fail.
  std::string want = fs::absolute(mnt).lexically_normal();
  while (f >> dev >> path && std::getline(f, rest))
    if (path == want) return true;
  return false;
}

std::string Tail(const std::string& log) {
  std::ifstream f(log);
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) lines.push_back(l);
  std::string out;
  for (size_t i = lines.size() > 8 ? lines.size() - 8 : 0; i < lines.size(); i++)
    out += "    " + lines[i] + "\n";
  return out;
}

struct UpOptions {
  std::string dir;
  unsigned dss = 6;
  std::string mount;
  unsigned port = 9400;
  unsigned k = 4, m = 2;
  std::string chunk_size = "4MiB", stripe_unit = "64KiB";
  unsigned lease_ms = 10000;
  bool config_only = false;  // write D/rustfs.toml (to edit it) and start nothing
};

Status WriteClusterConfig(const UpOptions& o) {
  Config c;
  c.mds.address = "127.0.0.1:" + std::to_string(o.port);
  c.mds.data_dir = o.dir + "/mds";
  for (unsigned i = 0; i < o.dss; i++)
    c.dss.push_back({"127.0.0.1:" + std::to_string(o.port + 1 + i), o.dir + "/dss-" + std::to_string(i)});
  c.mds.lease_ms = o.lease_ms;
  c.layout.k = o.k;
  c.layout.m = o.m;
  auto cs = ParseByteSize(o.chunk_size);
  if (!cs) return cs.error();
  auto su = ParseByteSize(o.stripe_unit);
  if (!su) return su.error();
  c.layout.chunk_size = *cs;
  c.ec.stripe_unit = *su;
  // A laptop-sized cluster: LLD-002's 8 GiB / 32 GiB caches are per-server
  // production figures; here six servers and a client share one machine.
  c.fragment_cache.capacity = 1 * kGiB;
  c.dss_hot_tier.capacity = 256 * kMiB;
  // Every connection of the cluster authenticates with this key (net/auth.h).
  c.cluster.key_file = o.dir + "/cluster.key";
  if (!fs::exists(c.cluster.key_file)) RUSTFS_RETURN_IF_ERROR(net::CreateClusterKey(c.cluster.key_file));
  RUSTFS_RETURN_IF_ERROR(ValidateConfig(c));
  std::ofstream(ConfigPath(o.dir)) << ConfigToToml(c);
  return Status::Ok();
}

int ClusterUp(UpOptions o) {
  o.dir = fs::absolute(o.dir);
  fs::create_directories(o.dir + "/logs");
  fs::create_directories(o.dir + "/pids");
  std::string cfg_path = ConfigPath(o.dir);
  if (!fs::exists(cfg_path)) {
    if (Status st = WriteClusterConfig(o); !st.ok()) {
      std::cerr << "rustfs: " << st.message() << "\n";
      return 2;
    }
  }
  auto cfg = LoadClusterConfig(o.dir);
  if (!cfg) {
    std::cerr << "rustfs: " << cfg.error().message() << "\n";
    return 2;
  }
  if (o.config_only) {
    std::cout << "wrote " << cfg_path << "\n";
    return 0;
  }
  std::string bin = SelfDir();
  auto start = [&](const std::string& name, std::vector<std::string> argv) -> Result<pid_t> {
    pid_t old = ReadPid(PidPath(o.dir, name));
    if (Alive(old)) return old;  // already running: `up` only starts what is missing
    return Spawn(std::move(argv), o.dir + "/logs/" + name + ".log", PidPath(o.dir, name));
  };
  auto mds = start("mds", {bin + "/rustfs-mds", "--config", cfg_path});
  if (!mds) {
    std::cerr << "rustfs: " << mds.error().message() << "\n";
    return 1;
  }
  for (size_t i = 0; i < cfg->dss.size(); i++) {
    auto d = start("dss-" + std::to_string(i),
                   {bin + "/rustfs-dss", "--config", cfg_path, "--id", std::to_string(i)});
    if (!d) {
      std::cerr << "rustfs: " << d.error().message() << "\n";
      return 1;
    }
  }
  client::MdsClient mc(cfg->mds.address, 1000, std::chrono::milliseconds(0));  // WaitFor polls
  size_t alive = 0;
  bool ok = WaitFor([&] {
    auto r = mc.Call<pb::ListDssReply>(pb::M_LIST_DSS, pb::Empty());
    if (!r) return false;
    alive = 0;
    for (auto& d : r->dss()) alive += d.alive();
    return alive == cfg->dss.size();
  }, *mds, std::chrono::seconds(20));
  if (!ok) {
    std::cerr << "rustfs: cluster did not come up (" << alive << "/" << cfg->dss.size()
              << " DSS alive). MDS log:\n" << Tail(o.dir + "/logs/mds.log");
    for (size_t i = 0; i < cfg->dss.size(); i++) {
      const std::string name = "dss-" + std::to_string(i);
      const pid_t pid = ReadPid(PidPath(o.dir, name));
      int st;
      if (pid > 0 && (waitpid(pid, &st, WNOHANG) == pid || !Alive(pid)))  // ours exit as zombies
        std::cerr << name << " exited; its log:\n" << Tail(o.dir + "/logs/" + name + ".log");
    }
    return 1;
  }
  std::cout << "cluster up: MDS " << cfg->mds.address << ", " << cfg->dss.size() << " DSS, RS "
            << cfg->layout.k << "+" << cfg->layout.m << ", chunk "
            << FormatByteSize(cfg->layout.chunk_size) << ", stripe unit "
            << FormatByteSize(cfg->ec.stripe_unit) << "\n";
  if (!o.mount.empty()) {
    o.mount = fs::absolute(o.mount);
    // An existing mount is not touched: stat()ing it would ask the cluster.
    if (!IsMounted(o.mount)) fs::create_directories(o.mount);
    std::ofstream(o.dir + "/mountpoint") << o.mount << "\n";
    if (!IsMounted(o.mount)) {
      // A daemon whose mount is gone is on its way out (an unmount stops
      // it, after a moment's teardown): let it go, then start a new one.
      const pid_t old = ReadPid(PidPath(o.dir, "fuse"));
      if (!WaitFor([&] { return !Alive(old); }, 0, std::chrono::seconds(10))) {
        std::cerr << "rustfs: rustfs-fuse (pid " << old << ") still runs with nothing mounted on " << o.mount
                  << "; stop it first\n";
        return 1;
      }
      auto f = start("fuse", {bin + "/rustfs-fuse", "--config", cfg_path, "--mount", o.mount});
      if (!f || !WaitFor([&] { return IsMounted(o.mount); }, *f, std::chrono::seconds(10))) {
        std::cerr << "rustfs: mount failed. FUSE log:\n" << Tail(o.dir + "/logs/fuse.log");
        return 1;
      }
    }
    std::cout << "mounted on " << o.mount << "\n";
  }
  std::cout << "logs in " << o.dir << "/logs; stop with: " << bin << "/rustfs cluster down --dir "
            << o.dir << "\n";
  return 0;
}

int ClusterDown(std::string dir) {
  dir = fs::absolute(dir);
  std::ifstream mf(dir + "/mountpoint");
  std::string mnt;
  if (mf >> mnt && IsMounted(mnt)) {
    std::string cmd = "fusermount3 -u '" + mnt + "' 2>/dev/null || umount -l '" + mnt + "'";
    if (std::system(cmd.c_str()) != 0) std::cerr << "rustfs: could not unmount " << mnt << "\n";
  }
  std::vector<std::pair<fs::path, pid_t>> pids;
  if (fs::exists(dir + "/pids"))
    for (auto& e : fs::directory_iterator(dir + "/pids")) pids.emplace_back(e.path(), ReadPid(e.path()));
  for (auto& [path, p] : pids)
    if (Alive(p)) kill(p, SIGTERM);
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (auto& [path, p] : pids) {
    while (Alive(p) && std::chrono::steady_clock::now() < end) {
      waitpid(p, nullptr, WNOHANG);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (Alive(p)) kill(p, SIGKILL);
    fs::remove(path);
  }
  std::cout << "cluster in " << dir << " stopped (" << pids.size() << " processes)\n";
  return 0;
}

Result<std::map<std::string, uint64_t>> RemoteStats(const std::string& addr) {
  net::RpcChannel ch(addr, 2000, "cli");
  auto r = ch.CallTyped<pb::StatsReply>(pb::M_STATS, pb::Empty());
  if (!r) return Err(r.error());
  return std::map<std::string, uint64_t>(r->counters().begin(), r->counters().end());
}

// Flat JSON object of numbers -> map (the FUSE daemon's xattr).
std::map<std::string, uint64_t> ParseFlatJson(const std::string& s) {
  std::map<std::string, uint64_t> out;
  size_t i = 0;
  while ((i = s.find('"', i)) != std::string::npos) {
    size_t j = s.find('"', i + 1);
    size_t colon = s.find(':', j);
    out[s.substr(i + 1, j - i - 1)] = std::stoull(s.substr(colon + 1));
    i = s.find_first_of(",}", colon);
  }
  return out;
}

int Stats(std::string dir, bool json) {
  auto cfg = LoadClusterConfig(dir);
  if (!cfg) {
    std::cerr << "rustfs: " << cfg.error().message() << "\n";
    return 2;
  }
  std::map<std::string, std::map<std::string, uint64_t>> procs;
  if (auto s = RemoteStats(cfg->mds.address); s) procs["mds"] = *s;
  for (size_t i = 0; i < cfg->dss.size(); i++)
    if (auto s = RemoteStats(cfg->dss[i].address); s) procs["dss-" + std::to_string(i)] = *s;
  std::ifstream mf(fs::absolute(dir).string() + "/mountpoint");
  std::string mnt;
  if (mf >> mnt) {
    char buf[65536];
    ssize_t n = getxattr(mnt.c_str(), kStatsXattr, buf, sizeof buf);
    if (n > 0) procs["client"] = ParseFlatJson(std::string(buf, n));
  }
  // Totals over all DSS, and the ratios users ask for.
  std::map<std::string, uint64_t> dss_total;
  for (auto& [name, c] : procs)
    if (name.starts_with("dss-"))
      for (auto& [k, v] : c)
        if (k.starts_with("dss.")) dss_total[k] += v;
  procs["dss-total"] = dss_total;
  if (json) {
    std::cout << "{";
    bool first = true;
    for (auto& [name, c] : procs) {
      std::cout << (first ? "" : ", ") << "\"" << name << "\": " << CountersToJson(c);
      first = false;
    }
    std::cout << "}\n";
    return 0;
  }
  for (auto& [name, c] : procs) {
    std::cout << name << ":\n";
    for (auto& [k, v] : c)
      if (v) std::cout << "  " << k << " = " << v << "\n";
  }
  uint64_t app = procs["client"]["client.app_bytes_read"];
  if (app)
    std::cout << "read amplification (DSS disk bytes read / application bytes read): "
              << double(dss_total["dss.disk_bytes_read"]) / app << "\n";
  return 0;
}

// `rustfs repair status`: the MDS's repair gauges and totals (repairer.h).
int RepairStatus(std::string dir) {
  auto cfg = LoadClusterConfig(dir);
  if (!cfg) {
    std::cerr << "rustfs: " << cfg.error().message() << "\n";
    return 2;
  }
  auto s = RemoteStats(cfg->mds.address);
  if (!s) {
    std::cerr << "rustfs: MDS at " << cfg->mds.address << ": " << s.error().message() << "\n";
    return 1;
  }
  auto get = [&](const char* k) { return s->count(k) ? s->at(k) : 0; };
  auto mib = [](uint64_t b) { return FormatByteSize(b); };
  std::cout << "degraded chunks queued for repair: " << get("mds.repair_queued_chunks") << "\n"
            << "bytes left to rebuild:             " << mib(get("mds.repair_bytes_left")) << "\n"
            << "repair rate (read + write):        " << mib(get("mds.repair_rate_bytes_per_s"))
            << "/s (limit " << mib(get("mds.repair_limit_bytes_per_s")) << "/s)\n"
            << "DSS gone past repair.grace_ms:     " << get("mds.dss_gone") << "\n"
            << "chunks repaired since MDS start:   " << get("mds.repair_chunks") << " ("
            << mib(get("mds.repair_bytes_written")) << " written)\n"
            << "degraded writes published:         " << get("mds.degraded_commits") << "\n"
            << "bad shards reported:               " << get("mds.bad_shards_reported") << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rustfs: random-read distributed file system"};
  app.require_subcommand(1);
  auto* cluster = app.add_subcommand("cluster", "local cluster on loopback");
  cluster->require_subcommand(1);
  UpOptions up;
  auto* up_cmd = cluster->add_subcommand("up", "start a local cluster (restarts missing processes)");
  up_cmd->add_option("--dir", up.dir, "cluster folder: config, data, logs, PIDs")->required();
  up_cmd->add_option("--dss", up.dss, "number of data servers (new cluster)");
  up_cmd->add_option("--mount", up.mount, "mount the cluster here with rustfs-fuse");
  up_cmd->add_option("--port", up.port, "MDS port; DSS i listens on port+1+i (new cluster)");
  up_cmd->add_option("--k", up.k, "data shards (new cluster)");
  up_cmd->add_option("--m", up.m, "parity shards (new cluster)");
  up_cmd->add_option("--chunk-size", up.chunk_size, "chunk size (new cluster)");
  up_cmd->add_option("--stripe-unit", up.stripe_unit, "EC stripe unit (new cluster)");
  up_cmd->add_option("--lease-ms", up.lease_ms, "client lease time in ms (new cluster)");
  up_cmd->add_flag("--config-only", up.config_only,
                   "write DIR/rustfs.toml and start nothing (edit it, then run up again)");
  std::string down_dir;
  auto* down_cmd = cluster->add_subcommand("down", "unmount and stop a local cluster");
  down_cmd->add_option("--dir", down_dir, "cluster folder")->required();
  std::string stats_dir;
  bool json = false;
  auto* stats_cmd = app.add_subcommand("stats", "counters of every process of a cluster");
  stats_cmd->add_option("--dir", stats_dir, "cluster folder")->required();
  stats_cmd->add_flag("--json", json, "machine-readable output");
  std::string repair_dir;
  auto* repair_cmd = app.add_subcommand("repair", "shard repair");
  repair_cmd->require_subcommand(1);
  auto* repair_status = repair_cmd->add_subcommand("status", "degraded chunks, bytes left, rate");
  repair_status->add_option("--dir", repair_dir, "cluster folder")->required();
  CLI11_PARSE(app, argc, argv);
  if (*up_cmd) return ClusterUp(up);
  if (*down_cmd) return ClusterDown(down_dir);
  if (*stats_cmd) return Stats(stats_dir, json);
  if (*repair_status) return RepairStatus(repair_dir);
  return 1;
}
