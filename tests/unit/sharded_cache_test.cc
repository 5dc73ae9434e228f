// The sharded cache is checked for what its callers rely on: the byte bound
// holds at every instant under concurrent use, a returned value is exactly
// the bytes inserted for that key (never another key's, even when hashes
// collide), values outlive eviction while held, and EraseIf drops exactly
// the matching keys. The concurrent tests are meant to be run under
// ThreadSanitizer too (cmake -DRUSTFS_TSAN=ON in a separate build dir).
#include "cache/sharded_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cache/hash.h"
#include "common/metrics.h"

namespace rustfs::cache {
namespace {

struct FragKey {
  uint64_t ino;
  uint64_t grain;
  bool operator==(const FragKey&) const = default;
};

struct FragKeyHash {
  size_t operator()(const FragKey& k) const { return Mix64(k.ino * 0x9e3779b97f4a7c15ULL ^ k.grain); }
};

// Every key has one possible value, derived from the key, so any value a
// lookup returns can be checked, whichever thread inserted it.
std::string ValueFor(const FragKey& k, uint64_t max_size = 3000) {
  const uint64_t h = Mix64(k.ino * 1315423911ULL + k.grain);
  std::string v(h % max_size, '\0');
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<char>('a' + (h + i) % 26);
  return v;
}

std::shared_ptr<const std::string> MakeValue(const FragKey& k, uint64_t max_size = 3000) {
  return std::make_shared<const std::string>(ValueFor(k, max_size));
}

using Cache = ShardedCache<FragKey, FragKeyHash>;

std::unique_ptr<Cache> MakeCache(uint64_t capacity, uint32_t shards = 16, const std::string& policy = "tinylfu",
                                 const std::string& metrics_prefix = "") {
  auto c = Cache::Create(Cache::Options{.capacity_bytes = capacity,
                                        .num_shards = shards,
                                        .policy = policy,
                                        .expected_value_bytes = 1500,
                                        .metrics_prefix = metrics_prefix});
  EXPECT_TRUE(c.has_value()) << c.error().ToString();
  return std::move(*c);
}

TEST(ShardedCacheTest, RejectsBadOptions) {
  auto three = Cache::Create(Cache::Options{.capacity_bytes = 1 << 20, .num_shards = 3});
  ASSERT_FALSE(three.has_value());
  EXPECT_EQ(three.error().code(), Code::kInvalidArgument);
  auto zero = Cache::Create(Cache::Options{.capacity_bytes = 1 << 20, .num_shards = 0});
  EXPECT_FALSE(zero.has_value());
  auto arc = Cache::Create(Cache::Options{.capacity_bytes = 1 << 20, .policy = "arc"});
  ASSERT_FALSE(arc.has_value());
  EXPECT_NE(arc.error().message().find("arc"), std::string::npos);
}

TEST(ShardedCacheTest, LookupReturnsInsertedBytesAndCounts) {
  auto cache = MakeCache(4 << 20, 16, "tinylfu", "test.cache");
  const uint64_t hits0 = GetCounter("test.cache.hits").Get();
  for (uint64_t g = 0; g < 100; ++g) EXPECT_EQ(cache->Lookup({1, g}), nullptr);
  uint64_t charged = 0;
  for (uint64_t g = 0; g < 100; ++g) {
    auto v = MakeValue({1, g});
    charged += v->size() + Cache::kEntryOverheadBytes;
    EXPECT_TRUE(cache->Insert({1, g}, v));
  }
  EXPECT_EQ(cache->used_bytes(), charged);
  EXPECT_EQ(cache->size(), 100u);
  for (uint64_t g = 0; g < 100; ++g) {
    auto v = cache->Lookup({1, g});
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(*v, ValueFor({1, g}));
  }
  EXPECT_EQ(cache->Lookup({2, 0}), nullptr);
  EXPECT_EQ(cache->hits(), 100u);
  EXPECT_EQ(cache->misses(), 101u);
  EXPECT_EQ(GetCounter("test.cache.hits").Get() - hits0, 100u);

  // Replacing a value swaps the bytes and the charge.
  auto bigger = std::make_shared<const std::string>(5000, 'z');
  EXPECT_TRUE(cache->Insert({1, 0}, bigger));
  EXPECT_EQ(*cache->Lookup({1, 0}), std::string(5000, 'z'));
  EXPECT_EQ(cache->used_bytes(), charged - ValueFor({1, 0}).size() + 5000);
  EXPECT_FALSE(cache->Insert({1, 1}, nullptr));
}

TEST(ShardedCacheTest, HeldValueOutlivesEvictionAndErase) {
  auto cache = MakeCache(64 << 10, 4, "lru");
  cache->Insert({7, 7}, MakeValue({7, 7}));
  auto held = cache->Lookup({7, 7});
  ASSERT_NE(held, nullptr);
  EXPECT_TRUE(cache->Erase({7, 7}));
  EXPECT_FALSE(cache->Erase({7, 7}));
  EXPECT_EQ(cache->Lookup({7, 7}), nullptr);
  EXPECT_EQ(*held, ValueFor({7, 7}));

  cache->Insert({8, 8}, MakeValue({8, 8}));
  auto held2 = cache->Lookup({8, 8});
  for (uint64_t g = 0; g < 1000; ++g) cache->Insert({9, g}, MakeValue({9, g}));  // flushes the LRU
  EXPECT_EQ(cache->Lookup({8, 8}), nullptr);
  EXPECT_EQ(*held2, ValueFor({8, 8}));
}

TEST(ShardedCacheTest, OversizedValueIsRejected) {
  auto cache = MakeCache(16 << 10, 4);  // 4 KiB per shard
  auto big = std::make_shared<const std::string>(4096, 'x');  // + overhead > 4 KiB
  EXPECT_FALSE(cache->Insert({1, 1}, big));
  EXPECT_EQ(cache->Lookup({1, 1}), nullptr);
  EXPECT_EQ(cache->used_bytes(), 0u);
}

TEST(ShardedCacheTest, EraseIfRemovesExactlyTheMatchingKeys) {
  for (const char* policy : {"tinylfu", "lru"}) {
    SCOPED_TRACE(policy);
    auto cache = MakeCache(64 << 20, 16, policy);  // large: nothing is evicted
    uint64_t ino3_bytes = 0;
    for (uint64_t ino = 0; ino < 10; ++ino) {
      for (uint64_t g = 0; g < 50; ++g) {
        auto v = MakeValue({ino, g});
        if (ino == 3) ino3_bytes += v->size() + Cache::kEntryOverheadBytes;
        ASSERT_TRUE(cache->Insert({ino, g}, v));
      }
    }
    ASSERT_EQ(cache->size(), 500u);
    const uint64_t before = cache->used_bytes();
    EXPECT_EQ(cache->EraseIf([](const FragKey& k) { return k.ino == 3; }), 50u);
    EXPECT_EQ(cache->size(), 450u);
    EXPECT_EQ(cache->used_bytes(), before - ino3_bytes);
    for (uint64_t ino = 0; ino < 10; ++ino) {
      for (uint64_t g = 0; g < 50; ++g) {
        auto v = cache->Lookup({ino, g});
        if (ino == 3) {
          EXPECT_EQ(v, nullptr) << g;
        } else {
          ASSERT_NE(v, nullptr) << ino << "/" << g;
          EXPECT_EQ(*v, ValueFor({ino, g}));
        }
      }
    }
    EXPECT_EQ(cache->EraseIf([](const FragKey& k) { return k.ino == 3; }), 0u);
  }
}

// Every key hashes alike: all land in one shard under one policy key. The
// cache must still never hand out another key's bytes.
struct ConstantHash {
  size_t operator()(const FragKey&) const { return 42; }
};

TEST(ShardedCacheTest, HashCollisionsNeverReturnAnotherKeysValue) {
  auto created = ShardedCache<FragKey, ConstantHash>::Create({.capacity_bytes = 1 << 20, .num_shards = 4});
  ASSERT_TRUE(created.has_value());
  auto& cache = **created;
  EXPECT_TRUE(cache.Insert({1, 1}, MakeValue({1, 1})));
  EXPECT_TRUE(cache.Insert({2, 2}, MakeValue({2, 2})));  // displaces {1, 1}
  EXPECT_EQ(cache.Lookup({1, 1}), nullptr);
  ASSERT_NE(cache.Lookup({2, 2}), nullptr);
  EXPECT_EQ(*cache.Lookup({2, 2}), ValueFor({2, 2}));
  EXPECT_FALSE(cache.Erase({1, 1}));  // must not erase {2, 2}
  EXPECT_NE(cache.Lookup({2, 2}), nullptr);
  EXPECT_EQ(cache.used_bytes(), (ValueFor({2, 2}).size() + ShardedCache<FragKey, ConstantHash>::kEntryOverheadBytes));
}

// LookupVisit hands the bytes of the value and the tag the latest Insert
// gave, read from the map: a replaced value (or another key's, after a hash
// collision) must never show its predecessor's bytes or tag.
TEST(ShardedCacheTest, LookupVisitGivesTheLatestValuesBytesAndTag) {
  auto created = ShardedCache<FragKey, ConstantHash>::Create({.capacity_bytes = 1 << 20, .num_shards = 4});
  ASSERT_TRUE(created.has_value());
  auto& cache = **created;
  auto visit = [&](const FragKey& k, std::string* bytes, uint64_t* tag) {
    return cache.LookupVisit(k, [&](std::string_view b, uint64_t t) { *bytes = std::string(b), *tag = t; });
  };
  std::string bytes;
  uint64_t tag = 0;
  EXPECT_FALSE(visit({1, 1}, &bytes, &tag));
  ASSERT_TRUE(cache.Insert({1, 1}, MakeValue({1, 1}), 0x1111));
  ASSERT_TRUE(visit({1, 1}, &bytes, &tag));
  EXPECT_EQ(bytes, ValueFor({1, 1}));
  EXPECT_EQ(tag, 0x1111u);
  ASSERT_TRUE(cache.Insert({1, 1}, std::make_shared<const std::string>("replaced"), 0x2222));
  ASSERT_TRUE(visit({1, 1}, &bytes, &tag));
  EXPECT_EQ(bytes, "replaced");
  EXPECT_EQ(tag, 0x2222u);
  ASSERT_TRUE(cache.Insert({2, 2}, MakeValue({2, 2})));  // same hash: displaces {1, 1}, tag 0
  EXPECT_FALSE(visit({1, 1}, &bytes, &tag));
  ASSERT_TRUE(visit({2, 2}, &bytes, &tag));
  EXPECT_EQ(bytes, ValueFor({2, 2}));
  EXPECT_EQ(tag, 0u);
}

// Peek is a look, not a read: it returns the value and its tag, counts no
// hit or miss, and leaves the policy as it was. With LRU over room for two
// values, a peeked key stays least recent (the next insert evicts it),
// where a Lookup of it would have made the other one the victim.
TEST(ShardedCacheTest, PeekCountsNothingAndLeavesThePolicyAlone) {
  const uint64_t room = 2 * (100 + Cache::kEntryOverheadBytes);
  for (bool peek : {true, false}) {
    auto cache = MakeCache(room, 1, "lru");
    auto value = [](char c) { return std::make_shared<const std::string>(100, c); };
    ASSERT_TRUE(cache->Insert({1, 1}, value('a'), 0xA));
    ASSERT_TRUE(cache->Insert({2, 2}, value('b'), 0xB));
    uint64_t tag = 0;
    if (peek) {
      EXPECT_EQ(cache->Peek({3, 3}, &tag), nullptr);
      auto got = cache->Peek({1, 1}, &tag);
      ASSERT_NE(got, nullptr);
      EXPECT_EQ(*got, std::string(100, 'a'));
      EXPECT_EQ(tag, 0xAu);
      EXPECT_EQ(cache->hits(), 0u);
      EXPECT_EQ(cache->misses(), 0u);
    } else {
      ASSERT_NE(cache->Lookup({1, 1}), nullptr);
      EXPECT_EQ(cache->hits(), 1u);
    }
    ASSERT_TRUE(cache->Insert({3, 3}, value('c')));
    EXPECT_EQ(cache->Peek({1, 1}) == nullptr, peek) << "peek " << peek;
    EXPECT_EQ(cache->Peek({2, 2}) == nullptr, !peek) << "peek " << peek;
  }
}

TEST(ShardedCacheTest, SingleShardWorks) {
  auto cache = MakeCache(1 << 20, 1);
  EXPECT_TRUE(cache->Insert({1, 2}, MakeValue({1, 2})));
  ASSERT_NE(cache->Lookup({1, 2}), nullptr);
}

// 8 threads of random lookups (inserting on a miss, as the fragment cache
// does), inserts, erases and occasional EraseIf, plus a watcher thread; the
// byte bound is checked after every operation and continuously.
void RunConcurrent(const std::string& policy) {
  SCOPED_TRACE(policy);
  constexpr uint64_t kCapacity = 256 << 10;  // ~180 values of ~1.5 KB over 4096 keys
  constexpr int kThreads = 8;
  constexpr int kOpsPerThread = 40'000;
  auto cache = MakeCache(kCapacity, 16, policy);
  std::atomic<uint64_t> bound_violations{0}, wrong_values{0}, hits{0}, lookups{0};
  std::atomic<bool> done{false};

  std::thread watcher([&] {
    while (!done.load(std::memory_order_acquire)) {
      if (cache->used_bytes() > kCapacity) bound_violations.fetch_add(1);
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      for (int i = 0; i < kOpsPerThread; ++i) {
        // Skewed: a quarter of the keys get most of the traffic.
        const uint64_t ino = rng() % 4 ? rng() % 16 : rng() % 64;
        const FragKey key{ino, rng() % 64};
        const int op = rng() % 100;
        if (op < 70) {
          auto v = cache->Lookup(key);
          lookups.fetch_add(1, std::memory_order_relaxed);
          if (v != nullptr) {
            hits.fetch_add(1, std::memory_order_relaxed);
            if (*v != ValueFor(key)) wrong_values.fetch_add(1);
          } else {
            cache->Insert(key, MakeValue(key));
          }
        } else if (op < 90) {
          cache->Insert(key, MakeValue(key));
        } else if (op < 99) {
          cache->Erase(key);
        } else {
          cache->EraseIf([&](const FragKey& k) { return k.ino == key.ino && k.grain % 8 == 0; });
        }
        if (cache->used_bytes() > kCapacity) bound_violations.fetch_add(1);
      }
    });
  }
  for (auto& w : workers) w.join();
  done.store(true, std::memory_order_release);
  watcher.join();
  EXPECT_EQ(bound_violations.load(), 0u);
  EXPECT_EQ(wrong_values.load(), 0u);
  EXPECT_GT(hits.load(), 0u);
  EXPECT_GT(cache->used_bytes(), kCapacity / 2) << "the cache should be mostly full";
  EXPECT_EQ(cache->hits(), hits.load());
  EXPECT_EQ(cache->hits() + cache->misses(), lookups.load());
  // Quiescent: every resident entry still reads back correctly.
  size_t resident = 0;
  for (uint64_t ino = 0; ino < 64; ++ino) {
    for (uint64_t g = 0; g < 64; ++g) {
      if (auto v = cache->Lookup({ino, g})) {
        ++resident;
        EXPECT_EQ(*v, ValueFor({ino, g}));
      }
    }
  }
  EXPECT_EQ(resident, cache->size());
}

TEST(ShardedCacheTest, ConcurrentByteBoundAndValuesTinyLfu) { RunConcurrent("tinylfu"); }
TEST(ShardedCacheTest, ConcurrentByteBoundAndValuesLru) { RunConcurrent("lru"); }

}  // namespace
}  // namespace rustfs::cache
