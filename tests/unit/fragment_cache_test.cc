// FragmentCache against a reference model: a per-page map of what was
// inserted, over random inserts, reads and erases.
#include "cache/fragment_cache.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace rustfs::cache {
namespace {

constexpr uint64_t P = FragmentCache::kPage;

Config::FragmentCache Cfg(uint64_t capacity, uint64_t grain = 64 * kKiB) {
  Config::FragmentCache c;
  c.capacity = capacity;
  c.grain_size = grain;
  return c;
}

std::string Bytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (auto& ch : s) ch = char(rng());
  return s;
}

TEST(FragmentCacheTest, RefusesBadGrain) {
  EXPECT_FALSE(FragmentCache::Create(Cfg(1 << 20, 3000)));
  EXPECT_FALSE(FragmentCache::Create(Cfg(1 << 20, 512 * kKiB)));
  EXPECT_TRUE(FragmentCache::Create(Cfg(1 << 20, 4 * kKiB)));
}

// With a cache big enough that nothing is evicted, Read returns exactly the
// pages inserted (byte for byte) and reports exactly the others as misses.
TEST(FragmentCacheTest, MatchesReferenceWithoutEviction) {
  std::mt19937_64 rng(1);
  for (uint64_t grain : {4 * kKiB, 16 * kKiB, 64 * kKiB, 256 * kKiB}) {
    auto fc = FragmentCache::Create(Cfg(1ull << 30, grain));
    ASSERT_TRUE(fc);
    std::map<std::pair<uint64_t, uint64_t>, std::string> ref;  // (ino, page) -> 4 KiB
    const uint64_t file_pages = 300;
    for (int step = 0; step < 3000; step++) {
      uint64_t ino = 1 + rng() % 3;
      int op = rng() % 10;
      uint64_t first = rng() % file_pages;
      uint64_t npages = 1 + rng() % 40;
      if (op < 5) {  // insert; sometimes with a short final page
        std::string data = Bytes(rng, npages * P - (rng() % 2 ? rng() % P : 0));
        (*fc)->Insert(ObjectId{uint64_t(ino)}, first * P, data);
        for (uint64_t p = 0; p < npages; p++) {
          std::string page = data.substr(std::min<size_t>(p * P, data.size()), P);
          page.resize(P, '\0');
          ref[{ino, first + p}] = page;
        }
      } else if (op < 9) {  // read an unaligned range
        uint64_t off = first * P + rng() % P;
        uint64_t len = 1 + rng() % (npages * P);
        std::string got(len, '\x77');
        auto misses = (*fc)->Read(ObjectId{uint64_t(ino)}, off, len, got.data());
        std::vector<FragmentCache::Range> want;
        for (uint64_t p = off / P; p * P < off + len; p++) {
          auto it = ref.find({ino, p});
          if (it == ref.end()) {
            if (!want.empty() && want.back().offset + want.back().length == p * P)
              want.back().length += P;
            else
              want.push_back({p * P, P});
            continue;
          }
          uint64_t s = std::max(off, p * P), e = std::min(off + len, (p + 1) * P);
          ASSERT_TRUE(got.substr(s - off, e - s) == it->second.substr(s - p * P, e - s))
              << "grain " << grain << " step " << step << " page " << p;
        }
        ASSERT_EQ(misses.size(), want.size());
        for (size_t i = 0; i < want.size(); i++) {
          EXPECT_EQ(misses[i].offset, want[i].offset);
          EXPECT_EQ(misses[i].length, want[i].length);
        }
        bool all = want.empty();
        EXPECT_EQ((*fc)->Contains(ObjectId{uint64_t(ino)}, off, len), all);
      } else {  // erase a range
        (*fc)->Erase(ObjectId{uint64_t(ino)}, first * P, npages * P);
        uint64_t g0 = first * P / grain, g1 = (first + npages) * P - 1;
        g1 /= grain;
        for (auto it = ref.begin(); it != ref.end();) {
          uint64_t g = it->first.second * P / grain;
          if (it->first.first == ino && g >= g0 && g <= g1)
            it = ref.erase(it);
          else
            ++it;
        }
      }
    }
  }
}

TEST(FragmentCacheTest, ChargesOnlyThePagesRead) {
  auto fc = FragmentCache::Create(Cfg(1ull << 30));
  ASSERT_TRUE(fc);
  std::mt19937_64 rng(2);
  for (uint64_t g = 0; g < 100; g++) (*fc)->Insert(ObjectId{uint64_t(7)}, g * 64 * kKiB, Bytes(rng, P));
  // 100 single pages: far less than 100 whole 64 KiB grains.
  EXPECT_LT((*fc)->used_bytes(), 100 * (P + 512));
  EXPECT_GE((*fc)->used_bytes(), 100 * P);
}

TEST(FragmentCacheTest, EraseWholeInodeLeavesOthers) {
  auto fc = FragmentCache::Create(Cfg(1ull << 30));
  ASSERT_TRUE(fc);
  std::mt19937_64 rng(3);
  std::string a = Bytes(rng, 10 * P), b = Bytes(rng, 10 * P);
  (*fc)->Insert(ObjectId{uint64_t(1)}, 0, a);
  (*fc)->Insert(ObjectId{uint64_t(2)}, 0, b);
  (*fc)->Erase(ObjectId{1});
  EXPECT_FALSE((*fc)->Contains(ObjectId{uint64_t(1)}, 0, P));
  std::string got(10 * P, '\0');
  EXPECT_TRUE((*fc)->Read(ObjectId{uint64_t(2)}, 0, 10 * P, got.data()).empty());
  EXPECT_EQ(got, b);
  (*fc)->Clear();
  EXPECT_FALSE((*fc)->Contains(ObjectId{uint64_t(2)}, 0, P));
}

// A page is cached in one tier at a time; lookups see both tiers.
TEST(FragmentCacheTest, TiersHoldEachPageOnce) {
  auto fc = FragmentCache::Create(Cfg(64 << 20));
  ASSERT_TRUE(fc);
  std::mt19937_64 rng(5);
  std::string a = Bytes(rng, 4 * P), b = Bytes(rng, 2 * P);
  (*fc)->Insert(ObjectId{uint64_t(9)}, 0, a, FragmentCache::Tier::kStream);
  std::string got(4 * P, '\0');
  EXPECT_TRUE((*fc)->Read(ObjectId{uint64_t(9)}, 0, 4 * P, got.data()).empty());
  EXPECT_EQ(got, a);
  // Newer bytes for pages 1-2 in the frequency tier win over the stream copy.
  (*fc)->Insert(ObjectId{uint64_t(9)}, P, b, FragmentCache::Tier::kFrequency);
  auto misses = (*fc)->Read(ObjectId{uint64_t(9)}, 0, 4 * P, got.data());
  EXPECT_EQ(got.substr(P, 2 * P), b);
  // The stream entry holding the overlapped pages was dropped whole: pages 0
  // and 3 are misses now, never stale.
  ASSERT_EQ(misses.size(), 2u);
  EXPECT_EQ(misses[0].offset, 0u);
  EXPECT_EQ(misses[1].offset, 3 * P);
}

// Only reads are accesses: a read that misses counts one miss per tier it
// looked in, and the Insert of what it fetched, a Contains check, or a
// merge of more pages into the grain count nothing (they would make a
// grain read once look read several times to W-TinyLFU, and skew the hit
// rate). Counted per tier by the caches' "<prefix>.*_cache.{hits,misses}".
TEST(FragmentCacheTest, ChecksAndInsertsAreNotReads) {
  auto fc = FragmentCache::Create(Cfg(64 << 20), "fctest_reads");
  ASSERT_TRUE(fc);
  auto count = [](const char* name) { return GetCounter(std::string("fctest_reads.") + name).Get(); };
  std::mt19937_64 rng(11);
  const std::string a = Bytes(rng, P), b = Bytes(rng, P);
  const ObjectId ino{uint64_t(4)};
  std::string got(2 * P, '\0');
  ASSERT_EQ((*fc)->Read(ino, 0, P, got.data()).size(), 1u);  // the read that misses
  (*fc)->Insert(ino, 0, a);
  EXPECT_TRUE((*fc)->Contains(ino, 0, P));
  EXPECT_FALSE((*fc)->Contains(ino, 0, 2 * P));
  (*fc)->Insert(ino, P, b);  // merged into the grain
  EXPECT_EQ(count("fragment_cache.misses"), 1u);
  EXPECT_EQ(count("stream_cache.misses"), 1u);
  EXPECT_EQ(count("fragment_cache.hits"), 0u);
  EXPECT_EQ(count("stream_cache.hits"), 0u);
  EXPECT_TRUE((*fc)->Read(ino, 0, 2 * P, got.data()).empty());  // both pages, one grain: one hit
  EXPECT_EQ(got, a + b);
  EXPECT_EQ(count("fragment_cache.hits"), 1u);
  EXPECT_EQ(count("fragment_cache.misses"), 1u);
}

// Objects differing in any field of their id are distinct (the DSS keys
// shards by inode, chunk/shard and version).
TEST(FragmentCacheTest, ObjectIdsAreDistinct) {
  auto fc = FragmentCache::Create(Cfg(64 << 20));
  ASSERT_TRUE(fc);
  std::mt19937_64 rng(6);
  std::vector<ObjectId> ids = {{1, 2, 3}, {1, 2, 4}, {1, 3, 3}, {2, 2, 3}};
  std::vector<std::string> data;
  for (auto& id : ids) {
    data.push_back(Bytes(rng, P));
    (*fc)->Insert(id, 0, data.back());
  }
  for (size_t i = 0; i < ids.size(); i++) {
    std::string got(P, '\0');
    EXPECT_TRUE((*fc)->Read(ids[i], 0, P, got.data()).empty());
    EXPECT_EQ(got, data[i]);
  }
}

TEST(FragmentCacheTest, StaysWithinCapacity) {
  const uint64_t cap = 4 << 20;
  auto fc = FragmentCache::Create(Cfg(cap));
  ASSERT_TRUE(fc);
  std::mt19937_64 rng(4);
  for (int i = 0; i < 2000; i++) {
    (*fc)->Insert(ObjectId{uint64_t(1 + rng() % 4)}, (rng() % 4096) * P, Bytes(rng, P * (1 + rng() % 16)));
    ASSERT_LE((*fc)->used_bytes(), cap);
  }
}

}  // namespace
}  // namespace rustfs::cache
