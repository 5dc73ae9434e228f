// cache_sim: hit rates of the fragment cache policies on synthetic traces.
//
// Runs the production policy code (src/cache, via MakePolicy) on
// deterministic traces and prints, for several cache sizes, the hit rate of
// W-TinyLFU and LRU next to two references:
//   oracle  a static cache holding the trace's C most frequent keys from the
//           start (the best any fixed set of C keys can do; it gets its
//           hits without compulsory misses)
//   OPT     Belady's offline optimum with bypass: on a miss, if the cache is
//           full, drop whichever of (resident keys, the new key) is next used
//           furthest in the future. Cold start, so it pays compulsory misses.
// Items are unit-sized (charge 1, capacity C), so hit rate = hits / accesses.
//
//   build/bin/cache_sim [--accesses N] [--keys K] [--seed S]
//
// Traces (K keys, N accesses; defaults 100,000 and 2,000,000):
//   uniform        every key equally likely
//   zipf-0.8/0.99/1.2   P(rank r) ~ 1 / r^s, ranks mapped to keys by a fixed
//                  random permutation
//   embedding      5% of the keys ("hot rows") get 80% of the lookups,
//                  uniform within the hot and within the cold set
//   zipf-0.99+scan Zipf 0.99 where every 50,000 accesses a scan of 5,000
//                  never-seen keys is inserted (one-shot reads)
// Cache sizes are 1%, 5% and 10% of K (the embedding trace also gets 6%, a
// little larger than its hot set); for the scan trace the scan keys are not
// counted in K.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cache/policy.h"

namespace rustfs::cache {
namespace {

struct Trace {
  std::string name;
  bool skewed;
  bool zipf;
  std::vector<uint64_t> keys;
};

std::vector<uint64_t> Permutation(uint64_t n, std::mt19937_64& rng) {
  std::vector<uint64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  std::shuffle(p.begin(), p.end(), rng);
  return p;
}

// Samples ranks 0..n-1 with P(r) ~ 1/(r+1)^s by inverting the exact CDF.
class ZipfSampler {
 public:
  ZipfSampler(uint64_t n, double s) : cdf_(n) {
    double sum = 0;
    for (uint64_t r = 0; r < n; ++r) cdf_[r] = (sum += 1.0 / std::pow(static_cast<double>(r + 1), s));
    for (double& c : cdf_) c /= sum;
  }
  uint64_t operator()(std::mt19937_64& rng) {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    const auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u);
    return std::min<uint64_t>(it - cdf_.begin(), cdf_.size() - 1);
  }

 private:
  std::vector<double> cdf_;
};

Trace Uniform(uint64_t keys, uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Trace t{"uniform", false, false, {}};
  t.keys.reserve(n);
  for (uint64_t i = 0; i < n; ++i) t.keys.push_back(rng() % keys);
  return t;
}

Trace Zipf(uint64_t keys, uint64_t n, double s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<uint64_t> key_of_rank = Permutation(keys, rng);
  ZipfSampler zipf(keys, s);
  char name[32];
  std::snprintf(name, sizeof(name), "zipf-%g", s);
  Trace t{name, true, true, {}};
  t.keys.reserve(n);
  for (uint64_t i = 0; i < n; ++i) t.keys.push_back(key_of_rank[zipf(rng)]);
  return t;
}

Trace Embedding(uint64_t keys, uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<uint64_t> perm = Permutation(keys, rng);
  const uint64_t hot = keys / 20;  // 5% of the rows
  Trace t{"embedding", true, false, {}};
  t.keys.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    const bool is_hot = rng() % 100 < 80;  // ... get 80% of the lookups
    t.keys.push_back(is_hot ? perm[rng() % hot] : perm[hot + rng() % (keys - hot)]);
  }
  return t;
}

Trace ZipfWithScans(uint64_t keys, uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<uint64_t> key_of_rank = Permutation(keys, rng);
  ZipfSampler zipf(keys, 0.99);
  Trace t{"zipf-0.99+scan", true, true, {}};
  t.keys.reserve(n);
  uint64_t next_scan_key = keys;  // never collides with a Zipf key
  while (t.keys.size() < n) {
    for (int i = 0; i < 50'000 && t.keys.size() < n; ++i) t.keys.push_back(key_of_rank[zipf(rng)]);
    for (int i = 0; i < 5'000 && t.keys.size() < n; ++i) t.keys.push_back(next_scan_key++);
  }
  return t;
}

uint64_t Distinct(const std::vector<uint64_t>& keys) {
  return std::unordered_set<uint64_t>(keys.begin(), keys.end()).size();
}

double PolicyHitRate(const char* name, const std::vector<uint64_t>& keys, uint64_t capacity) {
  std::unique_ptr<Policy> p = MakePolicy(name, capacity, capacity);
  std::vector<uint64_t> evicted;
  uint64_t hits = 0;
  for (uint64_t k : keys) {
    p->RecordAccess(k);
    if (p->Contains(k)) {
      ++hits;
      p->Touch(k);
    } else {
      p->Insert(k, 1, &evicted);
    }
  }
  return 100.0 * hits / keys.size();
}

double OracleHitRate(const std::vector<uint64_t>& keys, uint64_t capacity) {
  std::unordered_map<uint64_t, uint64_t> freq;
  for (uint64_t k : keys) ++freq[k];
  std::vector<uint64_t> counts;
  counts.reserve(freq.size());
  for (const auto& [k, c] : freq) counts.push_back(c);
  const size_t top = std::min<size_t>(capacity, counts.size());
  std::partial_sort(counts.begin(), counts.begin() + top, counts.end(), std::greater<>());
  const uint64_t hits = std::accumulate(counts.begin(), counts.begin() + top, uint64_t{0});
  return 100.0 * hits / keys.size();
}

double BeladyHitRate(const std::vector<uint64_t>& keys, uint64_t capacity) {
  constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
  std::vector<uint64_t> next_use(keys.size());
  {
    std::unordered_map<uint64_t, uint64_t> later;
    for (uint64_t i = keys.size(); i-- > 0;) {
      auto it = later.find(keys[i]);
      next_use[i] = it == later.end() ? kNever : it->second;
      later[keys[i]] = i;
    }
  }
  std::set<std::pair<uint64_t, uint64_t>> by_next;  // (next use, key); last = furthest
  std::unordered_map<uint64_t, uint64_t> resident;  // key -> its next use
  uint64_t hits = 0;
  for (uint64_t i = 0; i < keys.size(); ++i) {
    const uint64_t k = keys[i];
    auto it = resident.find(k);
    if (it != resident.end()) {
      ++hits;
      by_next.erase({it->second, k});
      it->second = next_use[i];
      by_next.insert({next_use[i], k});
      continue;
    }
    if (next_use[i] == kNever) continue;  // never read again: bypass
    if (resident.size() >= capacity) {
      auto furthest = std::prev(by_next.end());
      if (furthest->first <= next_use[i]) continue;  // the new key is the worst choice: bypass
      resident.erase(furthest->second);
      by_next.erase(furthest);
    }
    resident.emplace(k, next_use[i]);
    by_next.insert({next_use[i], k});
  }
  return 100.0 * hits / keys.size();
}

struct Row {
  std::string trace;
  bool skewed, zipf;
  uint64_t capacity;
  double percent;
  double tinylfu, lru, oracle, opt;
};

uint64_t ParseFlag(int argc, char** argv, const char* flag, uint64_t def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return std::strtoull(argv[i + 1], nullptr, 10);
  }
  return def;
}

int Main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("usage: %s [--accesses N] [--keys K] [--seed S]\n", argv[0]);
      return 0;
    }
  }
  const uint64_t n = ParseFlag(argc, argv, "--accesses", 2'000'000);
  const uint64_t keys = ParseFlag(argc, argv, "--keys", 100'000);
  const uint64_t seed = ParseFlag(argc, argv, "--seed", 42);
  if (n == 0 || keys < 100) {
    std::fprintf(stderr, "need --accesses > 0 and --keys >= 100\n");
    return 2;
  }
  std::printf("command:");
  for (int i = 0; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\naccesses=%llu keys=%llu seed=%llu; unit-size items, hit rate %% = hits / accesses\n",
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(keys),
              static_cast<unsigned long long>(seed));
  std::printf("oracle = static cache of the C most frequent keys (preloaded); OPT = Belady with bypass (cold)\n\n");

  const auto start = std::chrono::steady_clock::now();
  std::vector<Trace> traces;
  traces.push_back(Uniform(keys, n, seed + 1));
  traces.push_back(Zipf(keys, n, 0.8, seed + 2));
  traces.push_back(Zipf(keys, n, 0.99, seed + 3));
  traces.push_back(Zipf(keys, n, 1.2, seed + 4));
  traces.push_back(Embedding(keys, n, seed + 5));
  traces.push_back(ZipfWithScans(keys, n, seed + 6));

  std::printf("%-15s %9s %7s %5s | %9s %7s %7s %7s\n", "trace", "distinct", "cache", "size", "W-TinyLFU", "LRU",
              "oracle", "OPT");
  std::printf("%s\n", std::string(78, '-').c_str());
  std::vector<Row> rows;
  for (const Trace& t : traces) {
    std::vector<double> percents = {1, 5, 10};
    if (t.name == "embedding") percents = {1, 5, 6, 10};
    const uint64_t distinct = Distinct(t.keys);
    for (double pct : percents) {
      const uint64_t capacity = static_cast<uint64_t>(keys * pct / 100);
      Row r{t.name, t.skewed, t.zipf, capacity, pct,
            PolicyHitRate("tinylfu", t.keys, capacity), PolicyHitRate("lru", t.keys, capacity),
            OracleHitRate(t.keys, capacity), BeladyHitRate(t.keys, capacity)};
      std::printf("%-15s %9llu %7llu %4g%% | %9.2f %7.2f %7.2f %7.2f\n", r.trace.c_str(),
                  static_cast<unsigned long long>(distinct), static_cast<unsigned long long>(capacity), pct,
                  r.tinylfu, r.lru, r.oracle, r.opt);
      std::fflush(stdout);
      rows.push_back(r);
    }
  }

  std::printf("\ntargets:\n");
  bool all = true;
  auto report = [&](bool ok, const std::string& what) {
    all = all && ok;
    std::printf("  [%s] %s\n", ok ? "met" : "MISSED", what.c_str());
  };
  char buf[200];
  for (const Row& r : rows) {
    if (r.trace == "embedding" && r.percent == 6) {
      std::snprintf(buf, sizeof(buf), "embedding, cache 6%% (hot set 5%%): W-TinyLFU %.2f%% > 80%%", r.tinylfu);
      report(r.tinylfu > 80.0, buf);
    }
  }
  for (const Row& r : rows) {
    if (!r.skewed) continue;
    std::snprintf(buf, sizeof(buf), "%s @%g%%: W-TinyLFU %.2f > LRU %.2f", r.trace.c_str(), r.percent, r.tinylfu,
                  r.lru);
    report(r.tinylfu > r.lru, buf);
  }
  for (const Row& r : rows) {
    if (!r.zipf) continue;
    std::snprintf(buf, sizeof(buf), "%s @%g%%: W-TinyLFU %.2f within 3 points of oracle %.2f (gap %+.2f)",
                  r.trace.c_str(), r.percent, r.tinylfu, r.oracle, r.tinylfu - r.oracle);
    report(r.tinylfu >= r.oracle - 3.0, buf);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\n%s (%.1f s)\n", all ? "all targets met" : "some targets MISSED", secs);
  return 0;
}

}  // namespace
}  // namespace rustfs::cache

int main(int argc, char** argv) { return rustfs::cache::Main(argc, argv); }
