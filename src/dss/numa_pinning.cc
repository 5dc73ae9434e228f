#include "dss/numa_pinning.h"

#include <fcntl.h>
#include <numa.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <optional>

namespace rustfs::dss {
namespace {

// Far above any real machine; bounds the memory a hostile range can cost.
constexpr int kMaxCpu = 65535;

std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

// A whole decimal CPU number; nothing else (no sign, no trailing text).
std::optional<int> ParseCpu(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || s[0] == '-' || ec != std::errc() || p != s.data() + s.size() || v > kMaxCpu) {
    return std::nullopt;
  }
  return v;
}

// Sysfs attributes are a few bytes; one read() returns them whole.
Result<std::string> ReadSmallFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Err(Status::FromErrno(errno, "open " + path));
  char buf[4096];
  ssize_t n = ::read(fd, buf, sizeof(buf));
  int err = errno;
  ::close(fd);
  if (n < 0) return Err(Status::FromErrno(err, "read " + path));
  return std::string(buf, static_cast<size_t>(n));
}

// The numa_node attribute at `path`, or nullopt when there is none there
// (so the caller keeps looking). Garbage reads as -1: present but useless.
std::optional<int> ReadNumaNode(const std::string& path) {
  auto text = ReadSmallFile(path);
  if (!text) return std::nullopt;
  std::string_view s = Trim(*text);
  int v = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < -1) return -1;
  return v;
}

Result<std::vector<int>> ReadCpuListFile(const std::string& path) {
  auto text = ReadSmallFile(path);
  if (!text) return Err(text.error());
  auto cpus = ParseCpuList(*text);
  if (!cpus) return Err(InvalidArgument(path + ": " + cpus.error().message()));
  return cpus;
}

bool Contains(const std::vector<int>& sorted, int v) {
  return std::binary_search(sorted.begin(), sorted.end(), v);
}

// libnuma's answer cannot change while the process runs; ask once.
bool NumaUsable() {
  static const bool usable = numa_available() >= 0;
  return usable;
}

}  // namespace

std::string JoinCpus(const std::vector<int>& cpus) {
  std::string s;
  for (int c : cpus) {
    if (!s.empty()) s += ',';
    s += std::to_string(c);
  }
  return s.empty() ? "none" : s;
}

Result<std::vector<int>> ParseCpuList(std::string_view text) {
  std::vector<int> out;
  std::string_view rest = Trim(text);
  if (rest.empty()) return out;
  auto bad = [&](std::string_view why) {
    return Err(
        InvalidArgument("bad cpulist \"" + std::string(Trim(text)) + "\": " + std::string(why)));
  };
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = Trim(rest.substr(0, comma));
    if (item.empty()) return bad("empty element");
    size_t dash = item.find('-');
    auto lo = ParseCpu(Trim(item.substr(0, dash)));
    auto hi = dash == std::string_view::npos ? lo : ParseCpu(Trim(item.substr(dash + 1)));
    std::string quoted = std::string(1, '"').append(item).append(1, '"');
    if (!lo || !hi) return bad(quoted + " is not a cpu or cpu range");
    if (*lo > *hi) return bad("range " + quoted + " is reversed");
    for (int c = *lo; c <= *hi; ++c) out.push_back(c);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int NumaNodeOfDevice(unsigned major, unsigned minor, const std::string& sysfs_root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path root = fs::canonical(sysfs_root, ec);
  if (ec) return -1;
  // The real path, so ".." means the parent in the device tree (a
  // partition's disk, a disk's controller), not the parent of the symlink.
  fs::path dir = fs::canonical(
      root / "dev" / "block" / (std::to_string(major) + ":" + std::to_string(minor)), ec);
  if (ec) return -1;
  // Bounded so a strange tree cannot loop us; real paths are < 16 deep.
  for (int depth = 0; depth < 32 && dir != root && dir.has_relative_path(); ++depth) {
    if (auto n = ReadNumaNode(dir / "device" / "numa_node")) return *n;
    if (auto n = ReadNumaNode(dir / "numa_node")) return *n;
    dir = dir.parent_path();
  }
  return -1;
}

int NumaNodeOfPath(const std::string& path, const std::string& sysfs_root) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  // Major 0 is the kernel's anonymous device (tmpfs, overlay, proc): no disk.
  if (major(st.st_dev) == 0) return -1;
  return NumaNodeOfDevice(major(st.st_dev), minor(st.st_dev), sysfs_root);
}

Result<std::vector<int>> CpusOfNode(int node, const std::string& sysfs_root) {
  if (node < 0) return Err(InvalidArgument("CpusOfNode: node " + std::to_string(node) + " < 0"));
  return ReadCpuListFile(sysfs_root + "/devices/system/node/node" + std::to_string(node) +
                         "/cpulist");
}

Result<PollerPlacement> PlacePoller(const PinningOptions& o) {
  PollerPlacement pl;
  if (o.mode == "off") {
    pl.reason = "dss.numa_pinning = \"off\": poller not pinned";
    return pl;
  }
  if (o.mode != "auto" && o.mode != "manual") {
    return Err(InvalidArgument("dss.numa_pinning = \"" + o.mode +
                               "\": expected \"auto\", \"manual\" or \"off\""));
  }
  auto reserved = ParseCpuList(o.reserved_cpus);
  if (!reserved) return Err(InvalidArgument("reserved cpus: " + reserved.error().message()));
  std::vector<int> online = o.online_cpus;
  if (online.empty()) {
    auto r = ReadCpuListFile(o.sysfs_root + "/devices/system/cpu/online");
    if (!r) return Err(r.error());
    online = std::move(*r);
  } else {
    std::sort(online.begin(), online.end());
  }
  pl.node = o.data_dir.empty() ? -1 : NumaNodeOfPath(o.data_dir, o.sysfs_root);

  if (o.mode == "manual") {
    std::string c = "cpu " + std::to_string(o.manual_cpu);
    if (o.manual_cpu < 0) return Err(InvalidArgument("numa_pinning manual: " + c + " is negative"));
    if (!Contains(online, o.manual_cpu)) {
      return Err(InvalidArgument("numa_pinning manual: " + c +
                                 " is not online (online: " + JoinCpus(online) + ")"));
    }
    if (Contains(*reserved, o.manual_cpu)) {
      return Err(
          InvalidArgument("numa_pinning manual: " + c + " is reserved (" + o.reserved_cpus + ")"));
    }
    pl.cpus = {o.manual_cpu};
    pl.reason = "dss.numa_pinning = \"manual\": poller for " + o.data_dir + " pinned to " + c;
    return pl;
  }

  // auto
  std::vector<int> pool;
  std::string where;
  if (pl.node >= 0) {
    auto cpus = CpusOfNode(pl.node, o.sysfs_root);
    if (cpus) {
      // Only online CPUs can run a thread.
      for (int c : *cpus) {
        if (Contains(online, c)) pool.push_back(c);
      }
    }
    where = "NUMA node " + std::to_string(pl.node);
    if (pool.empty()) where += " (no online cpus of its own, using all online cpus)";
  } else {
    where = "an unknown NUMA node (using all online cpus)";
  }
  if (pool.empty()) pool = online;
  std::vector<int> candidates;
  for (int c : pool) {
    if (!Contains(*reserved, c)) candidates.push_back(c);
  }
  std::string head = "dss.numa_pinning = \"auto\": " + o.data_dir + " is on " + where;
  if (candidates.empty()) {
    pl.reason =
        head + "; every candidate cpu (" + JoinCpus(pool) + ") is reserved, poller not pinned";
    return pl;
  }
  const size_t first = o.disk_index % candidates.size();
  for (size_t i = 0; i < candidates.size(); i++)
    pl.cpus.push_back(candidates[(first + i) % candidates.size()]);
  pl.reason = head + "; disk " + std::to_string(o.disk_index) + " pollers on cpus " +
              JoinCpus(pl.cpus) + ", from cpu " + std::to_string(pl.cpu()) +
              (reserved->empty() ? "" : " (reserved " + JoinCpus(*reserved) + " skipped)");
  return pl;
}

void* AllocOnNode(size_t bytes, int node) {
  if (bytes == 0) return nullptr;
  // One allocator per process (chosen by NumaUsable) so FreeOnNode always
  // matches it; numa_alloc is "default policy" within libnuma's allocator.
  if (NumaUsable()) {
    if (node >= 0 && node <= numa_max_node()) return numa_alloc_onnode(bytes, node);
    return numa_alloc(bytes);
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void FreeOnNode(void* ptr, size_t bytes) {
  if (ptr == nullptr || bytes == 0) return;
  if (NumaUsable()) {
    numa_free(ptr, bytes);
  } else {
    ::munmap(ptr, bytes);
  }
}

}  // namespace rustfs::dss

namespace rustfs::dss {

void PreferNodeForNewMemory(int node) {
  if (node < 0 || !NumaUsable() || node > numa_max_node()) return;
  numa_set_preferred(node);
}

}  // namespace rustfs::dss
