// client_bench: native-client benchmarks against a running cluster, each next
// to an in-process ceiling measured in the same run by the same threads.
// Figures only: nothing is asserted about time. Reads are verified (a
// sample of every run, the whole file on the warm pass); a wrong byte stops
// the benchmark before any figure is printed.
//
//   client_bench --config D/rustfs.toml cached-read [--file NAME --size 256MiB
//                --threads 2 --seconds 5]
//       Creates (or reuses) NAME under the root with random bytes, reads it
//       whole once (fills the fragment cache), then `threads` threads each
//       do random 4 KiB-aligned 4 KiB Client::Read calls for `seconds`:
//       IOPS, p50/p99, fragment cache hit ratio, MDS RPCs during the run.
//       Then the same threads do random 4 KiB memcpy from a RAM buffer of
//       the same size (ceiling 1) and hash lookup + memcpy (ceiling 2).
//
//   client_bench --config D/rustfs.toml open-stat [--dir NAME --files 100000
//                --threads 2 --seconds 5 --max-create-seconds 0]
//       Creates the missing files f0000000.. in NAME (in `threads` threads),
//       then Lookup+Open+GetAttr+Release of files: one pass over every file
//       in order (cold), then random files for `seconds` (warm): ops/s and
//       MDS RPCs per op; next to an in-process ceiling (hash lookups and
//       attribute copies, no locks).
//
// The last line of each subcommand is "json: {...}" for bench/client_bench.py.
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cache/fragment_cache.h"
#include "cache/sharded_cache.h"
#include "client/client.h"
#include "common/config.h"
#include "common/log.h"
#include "common/units.h"

using namespace rustfs;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kRootIno = 1;
constexpr uint32_t kSampleEvery = 64;  // latency sample and verification: every 64th op

double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

uint64_t SplitMix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Per-thread RNG: xorshift64*, a handful of cycles.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed | 1) {}
  uint64_t Next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  // Uniform enough in [0, n) for n far below 2^32 (multiply-shift).
  uint64_t Below(uint64_t n) { return uint64_t((unsigned __int128)(Next()) * n >> 64); }
};

// Keeps the compiler from dropping a copy into `p`.
inline void Escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

[[noreturn]] void Die(const std::string& what) {
  fprintf(stderr, "client_bench: %s\n", what.c_str());
  fflush(stdout);
  std::exit(1);
}

uint64_t Get(const std::map<std::string, uint64_t>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

// A namespace change waits at the MDS while a client that looked the parent
// up, and has gone away without a word, has its lease waited out (lease_ms);
// the client's RPC timeout can fire first. Retries on kUnavailable for up to
// `patience`, saying so once.
template <class Fn>
auto RetryUnavailable(const std::string& what, std::chrono::milliseconds patience, Fn fn) {
  auto end = Clock::now() + patience;
  bool said = false;
  for (;;) {
    auto r = fn();
    if (r || r.error().code() != Code::kUnavailable || Clock::now() > end) return r;
    if (!said) {
      printf("  %s: MDS did not answer in time (%s); retrying for up to %.0f s (a departed "
             "client's lease being waited out?)\n", what.c_str(), r.error().message().c_str(),
             std::chrono::duration<double>(patience).count());
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// Hit ratio of the fragment cache between two snapshots, per 4 KiB page
// when the client counts pages (client.cache_page_hits/misses), else per
// grain lookup (client.fragment_cache.*, + client.stream_cache.* hits).
struct CacheDelta {
  uint64_t hits = 0, misses = 0;
  std::string unit;
  double ratio() const { return hits + misses ? double(hits) / double(hits + misses) : 0; }
};
CacheDelta CacheDeltaOf(const std::map<std::string, uint64_t>& a,
                        const std::map<std::string, uint64_t>& b) {
  auto d = [&](const std::string& k) { return Get(b, k) - Get(a, k); };
  CacheDelta c;
  if (b.count("client.cache_page_hits")) {
    c.hits = d("client.cache_page_hits");
    c.misses = d("client.cache_page_misses");
    c.unit = "pages";
  } else if (b.count("client.stream_cache.hits")) {
    // Each lookup consults both tiers: a grain found in either is a hit.
    c.hits = d("client.fragment_cache.hits") + d("client.stream_cache.hits");
    uint64_t lookups = d("client.fragment_cache.hits") + d("client.fragment_cache.misses");
    c.misses = lookups > c.hits ? lookups - c.hits : 0;
    c.unit = "grain lookups";
  } else {
    c.hits = d("client.fragment_cache.hits");
    c.misses = d("client.fragment_cache.misses");
    c.unit = "grain lookups";
  }
  return c;
}

struct RunResult {
  std::string name;
  double seconds = 0;
  std::vector<uint64_t> ops;   // per thread
  std::vector<int64_t> lat_ns;  // sampled, all threads
  uint64_t total() const {
    uint64_t t = 0;
    for (auto o : ops) t += o;
    return t;
  }
  double iops() const { return total() / seconds; }
  double pct(double q) {
    if (lat_ns.empty()) return 0;
    size_t i = std::min(lat_ns.size() - 1, size_t(q * lat_ns.size()));
    std::nth_element(lat_ns.begin(), lat_ns.begin() + i, lat_ns.end());
    return lat_ns[i] / 1000.0;
  }
};

// Runs `threads` threads for `seconds`; thread t calls op(t, rng, sample)
// in a loop, where `sample` is true every kSampleEvery-th op (timed with
// steady_clock). op returns false to fail the run.
template <class Op>
RunResult TimedRun(const std::string& name, unsigned threads, double seconds, Op op) {
  RunResult r;
  r.name = name;
  r.ops.assign(threads, 0);
  std::vector<std::vector<int64_t>> lat(threads);
  std::atomic<bool> go{false}, stop{false}, failed{false};
  std::atomic<unsigned> ready{0};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      Rng rng(0x1234567ull * (t + 1) + uint64_t(Clock::now().time_since_epoch().count()));
      std::vector<int64_t>& my_lat = lat[t];
      my_lat.reserve(1 << 20);
      uint64_t n = 0;
      ready++;
      while (!go.load(std::memory_order_acquire)) {
      }
      while (!stop.load(std::memory_order_relaxed)) {
        if (n % kSampleEvery == 0) {
          auto t0 = Clock::now();
          bool ok = op(t, rng, true);
          my_lat.push_back((Clock::now() - t0).count());
          if (!ok) {
            failed = true;
            break;
          }
        } else if (!op(t, rng, false)) {
          failed = true;
          break;
        }
        n++;
      }
      r.ops[t] = n;
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  auto t0 = Clock::now();
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : ts) t.join();
  r.seconds = Secs(Clock::now() - t0);
  if (failed) Die(name + ": an operation failed (see above); no figures reported");
  for (auto& v : lat) r.lat_ns.insert(r.lat_ns.end(), v.begin(), v.end());
  return r;
}

void PrintRun(RunResult& r, double ceiling_iops = 0, const char* unit = "IOPS") {
  printf("  %-44s %12.0f %s  per thread:", r.name.c_str(), r.iops(), unit);
  for (auto o : r.ops) printf(" %.0f", o / r.seconds);
  printf("  p50 %.2f us  p99 %.2f us", r.pct(0.50), r.pct(0.99));
  if (ceiling_iops > 0) printf("  (%.3f of ceiling)", r.iops() / ceiling_iops);
  printf("\n");
}

std::unique_ptr<client::Client> Connect(const std::string& config_path, Config* cfg_out) {
  auto cfg = LoadConfigFile(config_path);
  if (!cfg) Die(cfg.error().message());
  auto c = client::Client::Create(*cfg);
  if (!c) Die("cannot connect: " + c.error().ToString());
  *cfg_out = *cfg;
  return std::move(*c);
}

// ---------------------------------------------------------------- cached-read

struct CachedReadOpts {
  std::string file = "client_bench.dat";
  std::string size = "256MiB";
  unsigned threads = 2;
  double seconds = 5;
  bool warm_random = true;
};

int CachedRead(const std::string& config_path, const CachedReadOpts& o) {
  Config cfg;
  auto size_r = ParseByteSize(o.size);
  if (!size_r) Die(size_r.error().message());
  const uint64_t size = *size_r;
  if (size < kPage || size % kPage) Die("--size must be a positive multiple of 4KiB");
  auto c = Connect(config_path, &cfg);
  const uint64_t npages = size / kPage;

  // Cache fit: each grain is charged its bytes and the cache's
  // bookkeeping; each shard holds an equal share of the capacity.
  const uint64_t grain = cfg.fragment_cache.grain_size;
  const uint64_t charged = (size / grain + 1) * (grain + cache::ShardedCache<uint64_t>::kEntryOverheadBytes);
  printf("fragment cache: %s, capacity %s, grain %s, policy %s; data set %s (~%s charged)\n",
         cfg.fragment_cache.enabled ? "enabled" : "DISABLED",
         FormatByteSize(cfg.fragment_cache.capacity).c_str(), FormatByteSize(grain).c_str(),
         cfg.fragment_cache.policy.c_str(), FormatByteSize(size).c_str(),
         FormatByteSize(charged / kMiB * kMiB).c_str());
  if (!cfg.fragment_cache.enabled)
    printf("WARNING: fragment_cache.enabled = false: every read goes to the DSS\n");
  else if (size >= cfg.fragment_cache.capacity)
    printf("WARNING: data set (%s) >= fragment_cache.capacity (%s): not a cached-read run\n",
           FormatByteSize(size).c_str(), FormatByteSize(cfg.fragment_cache.capacity).c_str());
  else if (charged > cfg.fragment_cache.capacity * 3 / 4)
    printf("WARNING: data set + per-entry overhead is over 3/4 of the cache capacity: uneven "
           "shards may evict some grains\n");

  // The expected contents: deterministic from the size, so a reused file is
  // checked byte for byte. The same buffer is the ceiling's RAM source.
  std::unique_ptr<char[]> data(new char[size]);
  {
    uint64_t s = 0xC0FFEEull ^ size;
    for (uint64_t i = 0; i < size; i += 8) {
      uint64_t v = SplitMix(s);
      std::memcpy(data.get() + i, &v, 8);
    }
  }

  const uint64_t rpc0_all = Get(c->Stats(), "client.mds_rpcs");
  const auto patience = std::chrono::milliseconds(2 * cfg.mds.lease_ms + 5000);
  auto a = c->Lookup(kRootIno, o.file);
  bool need_write = true;
  if (a && a->size() == size) {
    need_write = false;
    printf("reusing /%s (ino %" PRIu64 ", %s)\n", o.file.c_str(), a->ino(),
           FormatByteSize(size).c_str());
  } else if (a) {
    printf("/%s exists with size %" PRIu64 ": rewriting\n", o.file.c_str(), a->size());
  } else if (a.error().code() != Code::kNotFound) {
    Die("lookup /" + o.file + ": " + a.error().ToString());
  }

  // Reads the whole file in 1 MiB requests and compares every byte; also
  // the warm pass that fills the fragment cache. Returns mismatching bytes.
  auto read_all = [&](uint64_t ino, double* secs) -> uint64_t {
    auto f = c->Open(ino);
    if (!f) Die("open: " + f.error().ToString());
    // Pinned to random: the pass then fills the frequency tier, which the
    // random reads use, and starts no read-ahead (a sequential pass would
    // fill the small stream tier instead).
    if (o.warm_random) (void)c->Advise(**f, 0, 0, POSIX_FADV_RANDOM);
    std::unique_ptr<char[]> buf(new char[kMiB]);
    uint64_t bad = 0;
    auto t0 = Clock::now();
    for (uint64_t off = 0; off < size; off += kMiB) {
      uint64_t len = std::min(kMiB, size - off);
      auto n = c->Read(**f, off, len, buf.get());
      if (!n) Die("read at " + std::to_string(off) + ": " + n.error().ToString());
      if (*n != len) Die("short read at " + std::to_string(off));
      if (std::memcmp(buf.get(), data.get() + off, len) != 0) bad++;
    }
    *secs = Secs(Clock::now() - t0);
    if (Status s = c->Release(std::move(*f)); !s.ok()) Die("release: " + s.ToString());
    return bad;
  };

  uint64_t ino = 0;
  double secs = 0;
  if (!need_write) {
    ino = a->ino();
    if (uint64_t bad = read_all(ino, &secs); bad) {
      printf("/%s: %" PRIu64 " MiB differ from the expected bytes: rewriting\n", o.file.c_str(), bad);
      need_write = true;
    } else {
      printf("warm pass (read whole file, verified): %.2f s, %.0f MiB/s\n", secs,
             size / kMiB / secs);
    }
  }
  if (need_write) {
    auto cr = RetryUnavailable("create /" + o.file, patience, [&] {
      return c->Create(kRootIno, o.file, S_IFREG | 0644, 0, 0, false);
    });
    if (!cr) Die("create /" + o.file + ": " + cr.error().ToString());
    ino = cr->ino();
    auto f = c->Open(ino);
    if (!f) Die("open: " + f.error().ToString());
    if (cr->size() > size) {
      pb::SetAttrReq r;
      r.set_ino(ino);
      r.set_valid(pb::SET_SIZE);
      r.set_size(0);
      if (auto t = c->SetAttr(r); !t) Die("truncate: " + t.error().ToString());
    }
    auto t0 = Clock::now();
    const uint64_t step = 4 * kMiB;
    for (uint64_t off = 0; off < size; off += step) {
      Status s = c->Write(**f, off, data.get() + off, std::min(step, size - off));
      if (!s.ok()) Die("write at " + std::to_string(off) + ": " + s.ToString());
    }
    if (Status s = c->Release(std::move(*f)); !s.ok()) Die("flush: " + s.ToString());
    double w = Secs(Clock::now() - t0);
    printf("wrote /%s (ino %" PRIu64 ", %s) through the client: %.2f s, %.0f MiB/s\n",
           o.file.c_str(), ino, FormatByteSize(size).c_str(), w, size / kMiB / w);
    if (uint64_t bad = read_all(ino, &secs); bad) Die(std::to_string(bad) + " MiB read back wrong");
    printf("warm pass (read whole file, verified): %.2f s, %.0f MiB/s\n", secs, size / kMiB / secs);
  }
  // A second verified pass: should be all hits (shows whether the cache holds the file).
  {
    auto s0 = c->Stats();
    if (uint64_t bad = read_all(ino, &secs); bad) Die(std::to_string(bad) + " MiB read back wrong");
    auto s1 = c->Stats();
    CacheDelta cd = CacheDeltaOf(s0, s1);
    printf("second pass (verified): %.2f s, %.0f MiB/s; cache hits %" PRIu64 " misses %" PRIu64
           " (%s), %" PRIu64 " bytes fetched from DSS\n", secs, size / kMiB / secs, cd.hits,
           cd.misses, cd.unit.c_str(),
           Get(s1, "client.shard_bytes_received") - Get(s0, "client.shard_bytes_received"));
  }

  // One handle per thread, as fio's jobs (each has its own access detector).
  std::vector<std::shared_ptr<client::OpenFile>> handles;
  for (unsigned t = 0; t < o.threads; t++) {
    auto f = c->Open(ino);
    if (!f) Die("open: " + f.error().ToString());
    handles.push_back(*f);
  }
  std::vector<std::unique_ptr<char[]>> bufs;
  for (unsigned t = 0; t < o.threads; t++) bufs.emplace_back(new char[kPage]);
  std::atomic<uint64_t> verified{0}, wrong{0};

  printf("\n%u threads, random 4 KiB-aligned 4 KiB reads, %.0f s each; latency sampled every "
         "%u ops\n", o.threads, o.seconds, kSampleEvery);
  auto s0 = c->Stats();
  RunResult ours = TimedRun("rustfs Client::Read (fragment cache)", o.threads, o.seconds,
                            [&](unsigned t, Rng& rng, bool sample) {
    uint64_t off = rng.Below(npages) * kPage;
    char* b = bufs[t].get();
    auto n = c->Read(*handles[t], off, kPage, b);
    if (!n || *n != kPage) {
      fprintf(stderr, "read at %" PRIu64 ": %s\n", off,
              n ? "short read" : n.error().ToString().c_str());
      return false;
    }
    if (sample) {
      verified.fetch_add(1, std::memory_order_relaxed);
      if (std::memcmp(b, data.get() + off, kPage) != 0) {
        wrong.fetch_add(1);
        fprintf(stderr, "WRONG BYTES at offset %" PRIu64 "\n", off);
        return false;
      }
    }
    return true;
  });
  auto s1 = c->Stats();
  if (wrong.load()) Die("wrong bytes read: no figures reported");
  for (auto& h : handles) (void)c->Release(h);
  handles.clear();
  auto d = [&](const char* k) { return Get(s1, k) - Get(s0, k); };
  const CacheDelta cd = CacheDeltaOf(s0, s1);
  const uint64_t hits = cd.hits, misses = cd.misses;
  const double hit_ratio = cd.ratio();
  const uint64_t mds = d("client.mds_rpcs");
  // Independent of how the cache counts: bytes the DSS sent per byte read.
  const uint64_t dss_bytes = d("client.shard_bytes_received");
  const double dss_per_app = double(dss_bytes) / double(std::max<uint64_t>(1, ours.total() * kPage));

  // Ceiling 1: memcpy of a random 4 KiB page of a RAM buffer of the same size.
  const char* src = data.get();
  RunResult mem = TimedRun("ceiling: memcpy 4 KiB from RAM buffer", o.threads, o.seconds,
                           [&](unsigned t, Rng& rng, bool) {
    char* b = bufs[t].get();
    std::memcpy(b, src + rng.Below(npages) * kPage, kPage);
    Escape(b);
    return true;
  });
  // Ceiling 2: hash lookup of the (ino, page) key, then memcpy.
  std::unordered_map<uint64_t, const char*> pages;
  pages.reserve(npages);
  for (uint64_t p = 0; p < npages; p++) pages.emplace(ino << 40 | p, src + p * kPage);
  RunResult hash = TimedRun("ceiling: unordered_map lookup + memcpy", o.threads, o.seconds,
                            [&](unsigned t, Rng& rng, bool) {
    char* b = bufs[t].get();
    auto it = pages.find(ino << 40 | rng.Below(npages));
    if (it == pages.end()) return false;
    std::memcpy(b, it->second, kPage);
    Escape(b);
    return true;
  });

  const double p50 = ours.pct(0.5), p99 = ours.pct(0.99);
  PrintRun(ours, mem.iops());
  PrintRun(mem);
  PrintRun(hash);
  printf("  verified %" PRIu64 " sampled reads byte for byte: all correct\n", verified.load());
  printf("  fragment cache during the run: hits %" PRIu64 " misses %" PRIu64 " (%s; hit ratio %.4f)"
         "   DSS bytes / app bytes: %.4f   MDS RPCs during the run: %" PRIu64 "\n", hits, misses,
         cd.unit.c_str(), hit_ratio, dss_per_app, mds);
  printf("  ours / memcpy ceiling: %.3f   ours / hash+memcpy ceiling: %.3f\n",
         ours.iops() / mem.iops(), ours.iops() / hash.iops());
  printf("  MDS RPCs of the whole command (create, write, open, run): %" PRIu64 "\n",
         Get(s1, "client.mds_rpcs") - rpc0_all);
  printf("json: {\"iops\": %.1f, \"per_thread\": [", ours.iops());
  for (size_t t = 0; t < ours.ops.size(); t++)
    printf("%s%.1f", t ? ", " : "", ours.ops[t] / ours.seconds);
  printf("], \"p50_us\": %.3f, \"p99_us\": %.3f, \"hits\": %" PRIu64 ", \"misses\": %" PRIu64
         ", \"hit_ratio\": %.6f, \"dss_per_app\": %.6f, \"mds_rpcs\": %" PRIu64 ", \"memcpy_iops\": %.1f, "
         "\"memcpy_p50_us\": %.3f, \"memcpy_p99_us\": %.3f, \"hash_iops\": %.1f, "
         "\"hash_p50_us\": %.3f, \"hash_p99_us\": %.3f, \"verified\": %" PRIu64
         ", \"threads\": %u, \"size\": %" PRIu64 "}\n",
         p50, p99, hits, misses, hit_ratio, dss_per_app, mds, mem.iops(), mem.pct(0.5), mem.pct(0.99),
         hash.iops(), hash.pct(0.5), hash.pct(0.99), verified.load(), o.threads, size);
  return 0;
}

// ------------------------------------------------------------------ open-stat

struct OpenStatOpts {
  std::string dir = "client_bench.d";
  uint64_t files = 100000;
  unsigned threads = 2;
  double seconds = 5;
  double max_create_seconds = 0;  // 0: no limit
};

std::string FileName(uint64_t i) {
  char b[32];
  snprintf(b, sizeof b, "f%07" PRIu64, i);
  return b;
}

int OpenStat(const std::string& config_path, const OpenStatOpts& o) {
  Config cfg;
  auto c = Connect(config_path, &cfg);
  printf("lease %u ms (attributes, entries and chunk maps cached while it holds)\n",
         cfg.mds.lease_ms);
  const auto patience = std::chrono::milliseconds(2 * cfg.mds.lease_ms + 5000);
  uint64_t dir_ino;
  if (auto a = c->Lookup(kRootIno, o.dir); a) {
    dir_ino = a->ino();
  } else if (a.error().code() == Code::kNotFound) {
    auto m = RetryUnavailable("mkdir /" + o.dir, patience, [&] {
      auto r = c->Mkdir(kRootIno, o.dir, 0755, 0, 0);
      // A timed-out try may have been carried out after all.
      if (!r && r.error().code() == Code::kAlreadyExists) return c->Lookup(kRootIno, o.dir);
      return r;
    });
    if (!m) Die("mkdir /" + o.dir + ": " + m.error().ToString());
    dir_ino = m->ino();
  } else {
    Die("lookup /" + o.dir + ": " + a.error().ToString());
  }

  // What is there already (one READDIR per 1024 names).
  std::unordered_set<std::string> present;
  {
    std::string after;
    for (;;) {
      auto r = c->ReadDir(dir_ino, after, 1024);
      if (!r) Die("readdir: " + r.error().ToString());
      for (auto& e : r->entries()) present.insert(e.name());
      if (!r->more() || r->entries().empty()) break;
      after = r->entries(r->entries_size() - 1).name();
    }
  }
  std::vector<uint64_t> missing;
  for (uint64_t i = 0; i < o.files; i++)
    if (!present.count(FileName(i))) missing.push_back(i);
  printf("/%s: %zu of %" PRIu64 " files already there, creating %zu in %u threads\n",
         o.dir.c_str(), o.files - missing.size(), o.files, missing.size(), o.threads);

  std::vector<char> created(o.files, 1);
  for (auto i : missing) created[i] = 0;
  std::atomic<uint64_t> next{0}, done{0};
  std::atomic<bool> stop_create{false}, create_failed{false};
  auto c0 = Clock::now();
  {
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < o.threads; t++)
      ts.emplace_back([&] {
        for (;;) {
          if (stop_create) return;
          uint64_t k = next.fetch_add(1);
          if (k >= missing.size()) return;
          uint64_t i = missing[k];
          auto a = RetryUnavailable("create " + FileName(i), patience, [&] {
            return c->Create(dir_ino, FileName(i), S_IFREG | 0644, 0, 0, false);
          });
          if (!a) {
            fprintf(stderr, "create %s: %s\n", FileName(i).c_str(), a.error().ToString().c_str());
            create_failed = true;
            stop_create = true;
            return;
          }
          created[i] = 1;
          done++;
        }
      });
    uint64_t step = std::max<uint64_t>(1, missing.size() / 10), shown = 0;
    while (done.load() < missing.size() && !stop_create) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      uint64_t n = done.load();
      double el = Secs(Clock::now() - c0);
      if (n >= shown + step) {
        shown = n / step * step;
        double rate = n / el;
        printf("  created %" PRIu64 "/%zu (%.0f%%) in %.1f s, %.0f files/s, ~%.0f s to go\n", n,
               missing.size(), 100.0 * n / missing.size(), el, rate,
               (missing.size() - n) / std::max(rate, 1e-9));
        fflush(stdout);
      }
      if (o.max_create_seconds > 0 && el > o.max_create_seconds && n < missing.size()) {
        printf("  creation stopped after %.1f s (--max-create-seconds): %" PRIu64 " files at %.0f"
               " files/s; all %zu would take ~%.0f s\n", el, n, n / el, missing.size(),
               missing.size() / std::max(n / el, 1e-9));
        stop_create = true;
      }
    }
    for (auto& t : ts) t.join();
  }
  if (create_failed) Die("file creation failed");
  const double create_s = Secs(Clock::now() - c0);
  const uint64_t ncreated = done.load();
  printf("creation: %" PRIu64 " files in %.2f s (%.0f files/s, %u threads)\n", ncreated, create_s,
         ncreated / std::max(create_s, 1e-9), o.threads);
  std::vector<uint64_t> files;
  for (uint64_t i = 0; i < o.files; i++)
    if (created[i]) files.push_back(i);
  if (files.empty()) Die("no files to open");
  std::vector<std::string> names;
  for (auto i : files) names.push_back(FileName(i));
  const uint64_t nfiles = names.size();

  // One Lookup + Open + GetAttr + Release.
  auto one = [&](const std::string& name) -> bool {
    auto a = c->Lookup(dir_ino, name);
    if (!a) {
      fprintf(stderr, "lookup %s: %s\n", name.c_str(), a.error().ToString().c_str());
      return false;
    }
    auto f = c->Open(a->ino());
    if (!f) {
      fprintf(stderr, "open %s: %s\n", name.c_str(), f.error().ToString().c_str());
      return false;
    }
    auto g = c->GetAttr(a->ino());
    if (!g || g->ino() != a->ino() || !S_ISREG(g->mode())) {
      fprintf(stderr, "getattr %s: %s\n", name.c_str(), g ? "wrong inode" : g.error().ToString().c_str());
      return false;
    }
    Status s = c->Release(std::move(*f));
    if (!s.ok()) {
      fprintf(stderr, "release %s: %s\n", name.c_str(), s.ToString().c_str());
      return false;
    }
    return true;
  };

  // Pass 1: every file once, in order, split over the threads.
  uint64_t r0 = Get(c->Stats(), "client.mds_rpcs");
  auto p0 = Clock::now();
  {
    std::atomic<uint64_t> k{0};
    std::atomic<bool> bad{false};
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < o.threads; t++)
      ts.emplace_back([&] {
        for (uint64_t i; (i = k.fetch_add(1)) < nfiles && !bad;)
          if (!one(names[i])) bad = true;
      });
    for (auto& t : ts) t.join();
    if (bad) Die("first pass failed");
  }
  const double pass_s = Secs(Clock::now() - p0);
  const uint64_t pass_rpcs = Get(c->Stats(), "client.mds_rpcs") - r0;
  printf("\nLookup+Open+GetAttr+Release, %u threads, one client\n", o.threads);
  printf("  first pass (every file once, in order): %" PRIu64 " ops in %.2f s = %.0f ops/s, "
         "%.3f MDS RPCs/op\n", nfiles, pass_s, nfiles / pass_s, double(pass_rpcs) / nfiles);

  // Random files for `seconds`, with per-second windows.
  std::atomic<uint64_t> ops_now{0};
  std::atomic<bool> sampling{true};
  std::vector<std::pair<double, double>> windows;  // ops/s, RPCs/op
  std::thread sampler([&] {
    uint64_t lo = ops_now.load(), lr = Get(c->Stats(), "client.mds_rpcs");
    auto lt = Clock::now();
    while (sampling) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      uint64_t no = ops_now.load(), nr = Get(c->Stats(), "client.mds_rpcs");
      auto nt = Clock::now();
      if (no > lo) windows.push_back({(no - lo) / Secs(nt - lt), double(nr - lr) / (no - lo)});
      lo = no, lr = nr, lt = nt;
    }
  });
  r0 = Get(c->Stats(), "client.mds_rpcs");
  RunResult ours = TimedRun("rustfs Lookup+Open+GetAttr+Release", o.threads, o.seconds,
                            [&](unsigned, Rng& rng, bool) {
    if (!one(names[rng.Below(nfiles)])) return false;
    ops_now.fetch_add(1, std::memory_order_relaxed);
    return true;
  });
  const uint64_t run_rpcs = Get(c->Stats(), "client.mds_rpcs") - r0;
  sampling = false;
  sampler.join();

  // Ceiling: the same lookups in plain hash maps, no locks: name -> ino,
  // ino -> attributes (copied, as Lookup returns them), an open handle
  // allocated and freed, ino -> attributes again.
  std::unordered_map<std::string, uint64_t> by_name;
  std::unordered_map<uint64_t, pb::Attr> by_ino;
  for (uint64_t i = 0; i < nfiles; i++) {
    pb::Attr a;
    a.set_ino(1000 + i);
    a.set_mode(S_IFREG | 0644);
    a.set_nlink(1);
    a.mutable_layout();
    by_name.emplace(names[i], 1000 + i);
    by_ino.emplace(1000 + i, a);
  }
  RunResult ceil = TimedRun("ceiling: hash lookups + Attr copies", o.threads, o.seconds,
                            [&](unsigned, Rng& rng, bool) {
    auto n = by_name.find(names[rng.Below(nfiles)]);
    if (n == by_name.end()) return false;
    pb::Attr a = by_ino.find(n->second)->second;
    auto h = std::make_shared<client::OpenFile>();
    Escape(h.get());
    pb::Attr g = by_ino.find(a.ino())->second;
    Escape(&g);
    return g.ino() == a.ino();
  });

  PrintRun(ours, ceil.iops(), "ops/s");
  PrintRun(ceil, 0, "ops/s");
  printf("  random-file run: %.4f MDS RPCs/op (%" PRIu64 " RPCs)\n",
         double(run_rpcs) / std::max<uint64_t>(1, ours.total()), run_rpcs);
  printf("  per-second windows (ops/s, MDS RPCs/op):");
  for (auto& [r, q] : windows) printf(" (%.0f, %.4f)", r, q);
  printf("\n  ours / ceiling: %.3f\n", ours.iops() / ceil.iops());
  printf("json: {\"ops\": %.1f, \"rpcs_per_op\": %.6f, \"first_pass_ops\": %.1f, "
         "\"first_pass_rpcs_per_op\": %.6f, \"ceiling_ops\": %.1f, \"files\": %" PRIu64
         ", \"created\": %" PRIu64 ", \"create_s\": %.3f, \"threads\": %u, \"p50_us\": %.3f, "
         "\"p99_us\": %.3f}\n",
         ours.iops(), double(run_rpcs) / std::max<uint64_t>(1, ours.total()), nfiles / pass_s,
         double(pass_rpcs) / nfiles, ceil.iops(), nfiles, ncreated, create_s, o.threads,
         ours.pct(0.5), ours.pct(0.99));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rustfs native-client benchmarks (figures only)"};
  app.require_subcommand(1);
  std::string config_path;
  app.add_option("--config", config_path, "cluster config, e.g. DIR/rustfs.toml")->required();

  CachedReadOpts cr;
  auto* cr_cmd = app.add_subcommand("cached-read", "random 4 KiB reads served by the fragment cache");
  cr_cmd->add_option("--file", cr.file, "file under the root (created or reused)");
  cr_cmd->add_option("--size", cr.size, "file size, binary units (256MiB)");
  cr_cmd->add_option("--threads", cr.threads, "reader threads")->check(CLI::Range(1u, 1024u));
  cr_cmd->add_option("--seconds", cr.seconds, "seconds per run (ours and each ceiling)");
  bool warm_seq = false;
  cr_cmd->add_flag("--warm-unpinned", warm_seq,
                   "warm without POSIX_FADV_RANDOM (sequential pass may land in the stream tier)");

  OpenStatOpts os;
  auto* os_cmd = app.add_subcommand("open-stat", "Lookup+Open+GetAttr+Release of existing files");
  os_cmd->add_option("--dir", os.dir, "directory under the root (created or reused)");
  os_cmd->add_option("--files", os.files, "number of files")->check(CLI::Range(uint64_t(1), uint64_t(10000000)));
  os_cmd->add_option("--threads", os.threads, "threads")->check(CLI::Range(1u, 1024u));
  os_cmd->add_option("--seconds", os.seconds, "seconds of the random-file run and the ceiling");
  os_cmd->add_option("--max-create-seconds", os.max_create_seconds,
                     "stop creating after this long and measure the files made (0: no limit)");
  CLI11_PARSE(app, argc, argv);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  InitLogging("client_bench");
  cr.warm_random = !warm_seq;
  if (*cr_cmd) return CachedRead(config_path, cr);
  if (*os_cmd) return OpenStat(config_path, os);
  return 1;
}
