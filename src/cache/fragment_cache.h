// A fragment cache (LLD-002 §3.1, §3.2): the bytes reads actually fetched,
// not whole chunks, keyed by (object, grain) with grains of
// `grain_size` bytes (64 KiB by default). A grain holds only the 4 KiB pages
// that were read: a random 4 KiB read caches (and is charged) 4 KiB, never a
// 64 KiB grain it did not fetch, so caching costs no read amplification.
// Two tiers, because the two access patterns want opposite policies
// (LLD-002 §1.2: a file detected as random switches to frequency
// admission):
//  - kFrequency, for random and point reads: W-TinyLFU (src/cache) unless
//    policy = "lru", so a one-shot scan never evicts hot grains;
//  - kStream, for sequential files and read-ahead: a small LRU
//    (kStreamShare of the capacity), because read-ahead bytes are read once,
//    soon, and frequency admission would reject them before their reader
//    arrives.
// A lookup consults both.
//
// Thread-safe. Values are immutable; adding pages to a grain replaces it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cache/sharded_cache.h"
#include "common/config.h"

namespace rustfs::cache {

// What a cached byte belongs to: the client uses {ino, 0, 0}; the DSS hot
// tier a shard {ino, chunk << 8 | shard, version}.
struct ObjectId {
  uint64_t a = 0, b = 0, c = 0;
  bool operator==(const ObjectId&) const = default;
};

class FragmentCache {
 public:
  static constexpr uint64_t kPage = 4096;  // bytes; cache and checksum granularity

  // grain_size: a power of two from 4 KiB to 256 KiB (64 pages).
  // `metrics` prefixes the per-tier counters ("client.fragment_cache").
  static Result<std::unique_ptr<FragmentCache>> Create(const Config::FragmentCache& cfg,
                                                       const std::string& metrics = "client");

  uint64_t grain_size() const { return grain_; }

  enum class Tier { kFrequency = 0, kStream = 1 };
  static constexpr double kStreamShare = 0.125;

  struct Range {
    uint64_t offset;
    uint64_t length;
  };
  // Copies the cached parts of [offset, offset+len) into dst and returns
  // the page-aligned ranges that are not cached, in order, adjacent ones
  // merged (so each becomes one fetch).
  std::vector<Range> Read(const ObjectId& ino, uint64_t offset, uint64_t len, char* dst);
  // Fills dst with [offset, offset+len): cached pages are copied, each run
  // of missing pages is fetched by `fetch(run_offset, run_length, buf)`
  // (page-aligned, buf zeroed), cached in `tier` unless `keep` says no
  // (e.g. a revocation arrived meanwhile), and copied.
  using FetchFn = std::function<Status(uint64_t offset, uint64_t length, char* buf)>;
  Status ReadThrough(const ObjectId& ino, uint64_t offset, uint64_t len, char* dst, Tier tier,
                     const FetchFn& fetch, const std::function<bool()>& keep = {});
  // True when every page of [offset, offset+len) is cached.
  bool Contains(const ObjectId& ino, uint64_t offset, uint64_t len);
  // Caches `data`, which starts at page-aligned file offset `offset`; a
  // short final page is padded with zeros (it lies past the end of file).
  void Insert(const ObjectId& ino, uint64_t offset, std::string_view data, Tier tier = Tier::kFrequency);
  // Drops every grain of `ino` overlapping [offset, offset+len) (len 0:
  // the whole file).
  void Erase(const ObjectId& ino, uint64_t offset = 0, uint64_t len = 0);
  // Drops everything (the client lost its leases).
  void Clear() {
    for (auto& c : tiers_) c->EraseIf([](const Key&) { return true; });
  }

  uint64_t used_bytes() const { return tiers_[0]->used_bytes() + tiers_[1]->used_bytes(); }
  uint64_t capacity_bytes() const { return tiers_[0]->capacity_bytes() + tiers_[1]->capacity_bytes(); }

 private:
  struct Key {
    ObjectId ino;
    uint64_t grain;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return (k.ino.a * 0x9E3779B97F4A7C15ull) ^ (k.ino.b * 0xC2B2AE3D27D4EB4Full) ^
             (k.ino.c * 0x165667B19E3779F9ull) ^ k.grain;
    }
  };
  using Cache = cache::ShardedCache<Key, KeyHash>;

  FragmentCache(uint64_t grain, std::unique_ptr<Cache> freq, std::unique_ptr<Cache> stream,
                const std::string& metrics)
      : grain_(grain),
        tiers_{std::move(freq), std::move(stream)},
        page_hits_(GetCounter(metrics + ".cache_page_hits")),
        page_misses_(GetCounter(metrics + ".cache_page_misses")) {}
  // The pages of grain g that either tier holds: (tier value, its mask).
  struct Found {
    std::shared_ptr<const std::string> v[2];
    uint64_t mask[2] = {0, 0};
    uint64_t any() const { return mask[0] | mask[1]; }
    const char* Page(uint32_t page) const;
  };
  Found Find(const ObjectId& ino, uint64_t g);

  // A grain's value: u64 bitmap of cached pages, then those pages packed in
  // page order.
  static uint64_t MaskOf(const std::string& v);
  static const char* PageOf(const std::string& v, uint32_t page);

  const uint64_t grain_;
  std::unique_ptr<Cache> tiers_[2];
  // Per page over both tiers: the hit rate users ask for (each tier's own
  // counters count its lookups, and a page found in one tier is a lookup
  // miss in the other).
  Counter& page_hits_;
  Counter& page_misses_;
};

}  // namespace rustfs::cache
