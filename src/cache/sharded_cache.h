// Thread-safe, byte-bounded cache of immutable byte strings: the storage of
// the client fragment cache and the DSS hot-fragment tier (LLD-002 §3.1,
// §3.2). Keys are e.g. (inode, grain); values are the grain's bytes.
//
// Values are std::shared_ptr<const Value> (Value: std::string, or any type
// with data() and size(), e.g. PageArena::Bytes): a reader gets the pointer,
// not a copy, and the bytes stay valid for as long as the reader holds it,
// even after the entry is evicted or erased (the cache just drops its
// reference). The cache never mutates a value.
//
// The cache is split into N shards (a power of two, default 16), chosen by
// the top bits of the mixed key hash; each shard is a mutex, a Policy
// (W-TinyLFU by default) and a hash map, and gets capacity / N bytes. Each
// entry is charged value->size() + kEntryOverheadBytes. Every operation
// updates the policy and the map under the shard lock, and the policy
// enforces its shard's share, so used_bytes() <= capacity_bytes() holds at
// every instant, not just eventually.
//
// Inside a shard, entries are keyed by the 64-bit mixed hash of the key (the
// policy's key). Two distinct keys with the same hash are not conflated: the
// map keeps the full key and compares it, so such a pair simply evicts each
// other (a hit-rate cost, never a wrong value).
#pragma once

#include <atomic>
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cache/hash.h"
#include "common/adaptive_mutex.h"
#include "cache/policy.h"
#include "common/metrics.h"
#include "common/status.h"

namespace rustfs::cache {

template <class Key, class Hash = std::hash<Key>, class KeyEqual = std::equal_to<Key>, class Value = std::string>
class ShardedCache {
 public:
  // Bytes charged per entry on top of the value's size, an estimate of the
  // bookkeeping each entry costs: the shard map node (key, hash, value
  // pointer), the policy's list node and index node, and the value's
  // shared_ptr control block and the value object. Charging it keeps a
  // cache of many tiny values from using far more memory than configured.
  static constexpr uint64_t kEntryOverheadBytes = 192;

  struct Options {
    uint64_t capacity_bytes = 256ull << 20;  // total over all shards, bytes
    uint32_t num_shards = 16;                // power of two, >= 1
    std::string policy = "tinylfu";          // "tinylfu" | "lru"
    // Typical value size in bytes (64 KiB grains by default); with the
    // capacity it gives the expected entry count that sizes the sketch.
    uint64_t expected_value_bytes = 64 << 10;
    // If non-empty, hits and misses are also added to the process counters
    // "<prefix>.hits" and "<prefix>.misses" (common/metrics.h).
    std::string metrics_prefix{};
  };

  // Fails with kInvalidArgument for a shard count that is not a power of two
  // or an unknown policy name.
  static Result<std::unique_ptr<ShardedCache>> Create(const Options& options) {
    if (options.num_shards == 0 || !std::has_single_bit(options.num_shards)) {
      return Err(InvalidArgument("cache num_shards must be a power of two, got " +
                                 std::to_string(options.num_shards)));
    }
    const uint64_t shard_capacity = options.capacity_bytes / options.num_shards;
    const uint64_t expected_entries =
        std::max<uint64_t>(1, shard_capacity / (options.expected_value_bytes + kEntryOverheadBytes));
    std::unique_ptr<ShardedCache> cache(new ShardedCache(options));
    for (uint32_t i = 0; i < options.num_shards; ++i) {
      cache->shards_[i].policy = MakePolicy(options.policy, shard_capacity, expected_entries);
      if (cache->shards_[i].policy == nullptr) {
        return Err(InvalidArgument("unknown cache policy \"" + options.policy +
                                   "\" (expected \"tinylfu\" or \"lru\")"));
      }
    }
    return cache;
  }

  ShardedCache(const ShardedCache&) = delete;
  ShardedCache& operator=(const ShardedCache&) = delete;

  // The value cached for `key`, or nullptr. Records the access (hit or miss)
  // in the policy, so call it once per logical read.
  std::shared_ptr<const Value> Lookup(const Key& key) {
    std::shared_ptr<const Value> found;
    LookupEntry(key, [&](const Entry& e) { found = e.value; });
    return found;
  }

  // Like Lookup, but calls visit(std::string_view bytes, uint64_t tag) under
  // the shard lock instead of handing out a reference: `bytes` is the
  // value's bytes and `tag` the word Insert kept beside it. The hit path
  // copies the bytes it needs without touching the value's (shared,
  // contended) reference count, and reads the tag and where the bytes are
  // from the map's own node, not from the value's memory: each of those
  // would be a cache miss on a random read. `visit` must be short and must
  // not call into this cache. Returns whether `key` was cached.
  template <class Visit>
  bool LookupVisit(const Key& key, Visit&& visit) {
    return LookupEntry(key, [&](const Entry& e) { visit(e.bytes, e.tag); });
  }

  // The value cached for `key` (nullptr if none) and, through `tag`, the
  // word Insert kept beside it: a look that is not a read. The policy does
  // not see it and no hit or miss is counted, so a caller that checks what
  // is cached, or merges into the current value before an Insert, does not
  // make a key look read more often than it was (W-TinyLFU admits by how
  // often keys are read) nor skew the hit rate.
  std::shared_ptr<const Value> Peek(const Key& key, uint64_t* tag = nullptr) const {
    const uint64_t h = HashOf(key);
    const Shard& s = ShardFor(h);
    std::lock_guard lock(s.mu);
    auto it = s.map.find(h);
    if (it == s.map.end() || !equal_(it->second.key, key)) return nullptr;
    if (tag != nullptr) *tag = it->second.tag;
    return it->second.value;
  }

  // Offers `value` for `key` (replacing any cached value of `key`), with
  // `tag`, a word of the caller's kept beside it for LookupVisit (the
  // fragment cache keeps the value's page mask there). Returns whether it
  // is resident afterwards: the policy may reject it (W-TinyLFU admission,
  // or a charge above the shard's capacity). A null value is ignored
  // (returns false).
  bool Insert(const Key& key, std::shared_ptr<const Value> value, uint64_t tag = 0) {
    if (value == nullptr) return false;
    const uint64_t h = HashOf(key);
    const uint64_t charge = value->size() + kEntryOverheadBytes;
    Shard& s = ShardFor(h);
    std::vector<std::shared_ptr<const Value>> dropped;  // freed after unlocking
    bool resident;
    {
      std::lock_guard lock(s.mu);
      s.policy->Insert(h, charge, &s.evicted);
      for (uint64_t victim : s.evicted) {
        auto it = s.map.find(victim);
        if (it == s.map.end()) continue;
        dropped.push_back(std::move(it->second.value));
        s.map.erase(it);
      }
      resident = s.policy->Contains(h);
      if (resident) {
        auto [it, inserted] = s.map.try_emplace(h, Entry{key});
        if (!inserted) {
          dropped.push_back(std::move(it->second.value));
          it->second.key = key;  // a hash collision replaces the other key
        }
        it->second.bytes = {value->data(), value->size()};  // the value is immutable: its bytes stay put
        it->second.tag = tag;
        it->second.value = std::move(value);
      }
      s.used.store(s.policy->used_bytes(), std::memory_order_relaxed);
    }
    return resident;
  }

  // Drops `key` if cached. Returns whether it was.
  bool Erase(const Key& key) {
    const uint64_t h = HashOf(key);
    Shard& s = ShardFor(h);
    std::shared_ptr<const Value> dropped;
    std::lock_guard lock(s.mu);
    auto it = s.map.find(h);
    if (it == s.map.end() || !equal_(it->second.key, key)) return false;
    dropped = std::move(it->second.value);
    s.map.erase(it);
    s.policy->Erase(h);
    s.used.store(s.policy->used_bytes(), std::memory_order_relaxed);
    return true;
  }

  // Drops every cached key for which pred(key) is true, e.g. all grains of
  // one inode when a write invalidates it (LLD-002 §3.3). A full scan,
  // locking one shard at a time: an entry inserted into an already scanned
  // shard while it runs survives, so callers invalidate before they fetch
  // new data. Returns the number of entries dropped.
  template <class Pred>
  size_t EraseIf(Pred&& pred) {
    size_t erased = 0;
    for (uint32_t i = 0; i < num_shards_; ++i) {
      Shard& s = shards_[i];
      std::vector<std::shared_ptr<const Value>> dropped;
      std::lock_guard lock(s.mu);
      for (auto it = s.map.begin(); it != s.map.end();) {
        if (pred(std::as_const(it->second.key))) {
          s.policy->Erase(it->first);
          dropped.push_back(std::move(it->second.value));
          it = s.map.erase(it);
          ++erased;
        } else {
          ++it;
        }
      }
      s.used.store(s.policy->used_bytes(), std::memory_order_relaxed);
    }
    return erased;
  }

  // Bytes charged by resident entries. Each shard's share is read without
  // its lock but is always within that shard's bound, so the sum never
  // exceeds capacity_bytes().
  uint64_t used_bytes() const {
    uint64_t sum = 0;
    for (uint32_t i = 0; i < num_shards_; ++i) sum += shards_[i].used.load(std::memory_order_relaxed);
    return sum;
  }
  uint64_t capacity_bytes() const { return capacity_; }
  uint32_t num_shards() const { return num_shards_; }
  size_t size() const {
    size_t n = 0;
    for (uint32_t i = 0; i < num_shards_; ++i) {
      std::lock_guard lock(shards_[i].mu);
      n += shards_[i].map.size();
    }
    return n;
  }
  uint64_t hits() const { return Sum(&Shard::hits); }
  uint64_t misses() const { return Sum(&Shard::misses); }

 private:
  struct Entry {
    Key key;
    std::string_view bytes{};  // *value, read without touching value
    uint64_t tag = 0;          // Insert's tag
    std::shared_ptr<const Value> value{};
  };

  // Cache-line aligned so that shards locked by different threads do not
  // share a line.
  struct alignas(64) Shard {
    mutable AdaptiveMutex mu;
    std::unique_ptr<Policy> policy;
    std::unordered_map<uint64_t, Entry> map;  // by mixed hash of the key
    std::vector<uint64_t> evicted;            // scratch for Policy::Insert
    std::atomic<uint64_t> used{0};            // mirror of policy->used_bytes()
    std::atomic<uint64_t> hits{0};
    std::atomic<uint64_t> misses{0};
  };

  explicit ShardedCache(const Options& options)
      : capacity_(options.capacity_bytes),
        num_shards_(options.num_shards),
        shard_shift_(64 - std::countr_zero(options.num_shards)),
        shards_(new Shard[options.num_shards]) {
    if (!options.metrics_prefix.empty()) {
      hits_counter_ = &GetCounter(options.metrics_prefix + ".hits");
      misses_counter_ = &GetCounter(options.metrics_prefix + ".misses");
    }
  }

  // Lookup's common part: records the access and calls on_hit(entry) under
  // the shard lock when `key` is cached.
  template <class OnHit>
  bool LookupEntry(const Key& key, OnHit&& on_hit) {
    const uint64_t h = HashOf(key);
    Shard& s = ShardFor(h);
    std::lock_guard lock(s.mu);
    s.policy->RecordAccess(h);
    auto it = s.map.find(h);
    if (it != s.map.end() && equal_(it->second.key, key)) {
      s.policy->Touch(h);
      s.hits.fetch_add(1, std::memory_order_relaxed);
      if (hits_counter_ != nullptr) hits_counter_->Inc();
      on_hit(it->second);
      return true;
    }
    s.misses.fetch_add(1, std::memory_order_relaxed);
    if (misses_counter_ != nullptr) misses_counter_->Inc();
    return false;
  }

  uint64_t HashOf(const Key& key) const { return Mix64(static_cast<uint64_t>(hash_(key))); }

  Shard& ShardFor(uint64_t h) const {
    // shard_shift_ is 64 for a single shard, and a shift by 64 is undefined.
    return shards_[num_shards_ == 1 ? 0 : h >> shard_shift_];
  }

  uint64_t Sum(std::atomic<uint64_t> Shard::*field) const {
    uint64_t sum = 0;
    for (uint32_t i = 0; i < num_shards_; ++i) sum += (shards_[i].*field).load(std::memory_order_relaxed);
    return sum;
  }

  const uint64_t capacity_;
  const uint32_t num_shards_;
  const int shard_shift_;
  std::unique_ptr<Shard[]> shards_;
  Counter* hits_counter_ = nullptr;
  Counter* misses_counter_ = nullptr;
  [[no_unique_address]] Hash hash_;
  [[no_unique_address]] KeyEqual equal_;
};

}  // namespace rustfs::cache
