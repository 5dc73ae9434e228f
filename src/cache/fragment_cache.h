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
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cache/page_arena.h"
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
  static constexpr uint64_t kPage = PageArena::kPage;  // bytes; cache and checksum granularity

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
  // merged (so each becomes one fetch). Tier `first` is consulted first and
  // the other only for pages `first` lacks, so a hit in the expected tier
  // is one lookup (and no allocation: the returned vector is empty).
  std::vector<Range> Read(const ObjectId& ino, uint64_t offset, uint64_t len, char* dst,
                          Tier first = Tier::kFrequency);
  // True when every page of [offset, offset+len) is cached. Not a read:
  // neither the policies nor the hit and miss counters see it.
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
  // Values are a grain's pages in the arena (on huge pages; see page_arena.h).
  using Cache = cache::ShardedCache<Key, KeyHash, std::equal_to<Key>, PageArena::Bytes>;

  FragmentCache(uint64_t grain, std::unique_ptr<Cache> freq, std::unique_ptr<Cache> stream,
                const std::string& metrics)
      : grain_(grain),
        arena_(std::make_shared<PageArena>()),
        tiers_{std::move(freq), std::move(stream)},
        page_hits_(GetCounter(metrics + ".cache_page_hits")),
        page_misses_(GetCounter(metrics + ".cache_page_misses")) {}
  // Visits grain g's cached pages among `want` (a page mask), tier `first`
  // first, then the other for what is still wanted: calls
  // on_pages(value bytes, value's mask, wanted pages it has) under the
  // tier's shard lock for each tier that has some. Returns the wanted pages
  // neither tier has.
  template <class OnPages>
  uint64_t VisitGrain(const ObjectId& ino, uint64_t g, uint64_t want, Tier first, OnPages&& on_pages);
  // The pages of grain g that [offset, end) touches, as a mask.
  uint64_t WantedPages(uint64_t g, uint64_t offset, uint64_t end) const;
  static uint64_t PageMask(uint32_t first_page, uint32_t end_page) {  // pages [first, end)
    uint64_t upto = end_page >= 64 ? ~uint64_t(0) : (uint64_t(1) << end_page) - 1;
    return upto & ~((uint64_t(1) << first_page) - 1);
  }

  // A grain's value: its cached pages packed in page order (page-aligned:
  // a copy out of a page that straddles cache lines runs at half speed).
  // Which pages it holds (a bitmap) is kept in one place: the ShardedCache
  // tag it is inserted with, so a hit finds its page without reading
  // anything of the value but that page.
  // Page `page` (which `mask` has) of the value whose bytes start at `data`.
  static const char* PageOf(const char* data, uint64_t mask, uint32_t page);

  const uint64_t grain_;
  // Where the values of both tiers live; each value holds it too, so it
  // outlives a value a reader still holds.
  std::shared_ptr<PageArena> arena_;
  std::unique_ptr<Cache> tiers_[2];
  // Per page over both tiers: the hit rate users ask for (each tier's own
  // counters count its lookups, and a page found in one tier is a lookup
  // miss in the other).
  Counter& page_hits_;
  Counter& page_misses_;
};

}  // namespace rustfs::cache
