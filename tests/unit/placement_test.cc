// PlaceChunk: distinct DSS out of the live set, refusal when too few are
// alive, and a fair spread of shards over every DSS across many chunks.
#include "mds/placement.h"

#include "layout/layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <vector>

namespace rustfs::mds {
namespace {

std::vector<uint32_t> Ids(std::initializer_list<uint32_t> l) { return l; }

TEST(PlacementTest, GivesWidthDistinctLiveIds) {
  const std::vector<std::vector<uint32_t>> sets = {
      Ids({1}), Ids({3, 9}), Ids({0, 1, 2, 3, 4, 5}), Ids({2, 5, 7, 11, 13, 17, 19, 23, 29}),
      Ids({100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100, 1200})};
  for (const auto& alive : sets) {
    for (uint32_t width = 1; width <= alive.size(); width++) {
      for (uint64_t ino : {1ull, 2ull, 77ull, 123456789ull, ~0ull}) {
        for (uint64_t chunk = 0; chunk < 30; chunk++) {
          auto p = PlaceChunk(alive, width, ino, chunk);
          ASSERT_TRUE(p.has_value()) << p.error().ToString();
          ASSERT_EQ(p->size(), width);
          std::set<uint32_t> uniq(p->begin(), p->end());
          ASSERT_EQ(uniq.size(), width) << "duplicate DSS in placement";
          for (uint32_t id : *p)
            ASSERT_TRUE(std::binary_search(alive.begin(), alive.end(), id)) << id;
          // Deterministic: the same chunk always maps the same way.
          auto again = PlaceChunk(alive, width, ino, chunk);
          ASSERT_TRUE(again.has_value());
          ASSERT_EQ(*again, *p);
        }
      }
    }
  }
}

TEST(PlacementTest, TooFewAliveIsUnavailable) {
  auto p = PlaceChunk(Ids({1, 2, 3, 4, 5}), 6, 42, 0);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().code(), Code::kUnavailable);
  p = PlaceChunk({}, 1, 42, 0);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().code(), Code::kUnavailable);
  // Exactly enough is fine and uses every DSS.
  p = PlaceChunk(Ids({1, 2, 3, 4, 5, 6}), 6, 42, 3);
  ASSERT_TRUE(p.has_value());
  std::vector<uint32_t> sorted = *p;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, Ids({1, 2, 3, 4, 5, 6}));
}

TEST(PlacementTest, SpreadsOverEveryDss) {
  for (uint32_t n : {6u, 7u, 10u, 16u, 31u}) {
    std::vector<uint32_t> alive;
    for (uint32_t i = 0; i < n; i++) alive.push_back(10 + 3 * i);
    for (uint32_t width : {1u, 3u, 6u}) {
      if (width > n) continue;
      SCOPED_TRACE("n=" + std::to_string(n) + " width=" + std::to_string(width));
      std::map<uint32_t, uint64_t> total;
      for (uint64_t ino = 2; ino < 202; ino++) {
        std::map<uint32_t, uint64_t> per_file;
        const uint64_t chunks = 1 + ino % 40;
        for (uint64_t c = 0; c < chunks; c++) {
          auto p = PlaceChunk(alive, width, ino, c);
          ASSERT_TRUE(p.has_value());
          for (uint32_t id : *p) {
            total[id]++;
            per_file[id]++;
          }
        }
        // A file with at least n chunks reaches every DSS.
        if (chunks >= n) EXPECT_EQ(per_file.size(), n) << "ino " << ino;
      }
      ASSERT_EQ(total.size(), n);
      uint64_t sum = 0;
      for (auto& [id, cnt] : total) sum += cnt;
      const double mean = double(sum) / n;
      for (auto& [id, cnt] : total) {
        EXPECT_GE(double(cnt), mean / 2) << "DSS " << id << " under-used";
        EXPECT_LE(double(cnt), mean * 2) << "DSS " << id << " over-used";
      }
    }
  }
}

// Files of a single chunk each (the common small-file case) must not all
// start on the same DSS.
TEST(PlacementTest, SingleChunkFilesSpread) {
  std::vector<uint32_t> alive;
  for (uint32_t i = 1; i <= 12; i++) alive.push_back(i);
  std::map<uint32_t, uint64_t> first;
  const int files = 1200;
  for (uint64_t ino = 2; ino < 2 + files; ino++) {
    auto p = PlaceChunk(alive, 6, ino, 0);
    ASSERT_TRUE(p.has_value());
    first[(*p)[0]]++;
  }
  ASSERT_EQ(first.size(), alive.size());
  const double mean = double(files) / alive.size();
  for (auto& [id, cnt] : first) EXPECT_GE(double(cnt), mean / 2) << "DSS " << id;
}

}  // namespace
}  // namespace rustfs::mds

namespace rustfs::mds {
namespace {

constexpr uint32_t kNo = layout::kNoDss;

size_t Placed(const std::vector<uint32_t>& p) {
  return size_t(std::count_if(p.begin(), p.end(), [](uint32_t d) { return d != kNo; }));
}

TEST(PlaceWriteTest, FewerServersThanWidthLeavesParityPositionsEmpty) {
  // 4 writable for a 6-wide layout, min 5: refused; min 4: the last two
  // positions (parity) stay empty, the data positions get distinct servers.
  const std::vector<uint32_t> writable{0, 2, 3, 5};
  for (uint64_t chunk = 0; chunk < 20; chunk++) {
    EXPECT_EQ(PlaceWrite(writable, 6, 5, 9, chunk).error().code(), Code::kUnavailable);
    auto p = PlaceWrite(writable, 6, 4, 9, chunk);
    ASSERT_TRUE(p.has_value());
    ASSERT_EQ(p->size(), 6u);
    EXPECT_EQ((*p)[4], kNo);
    EXPECT_EQ((*p)[5], kNo);
    std::set<uint32_t> uniq(p->begin(), p->begin() + 4);
    EXPECT_EQ(uniq, std::set<uint32_t>(writable.begin(), writable.end()));
  }
}

TEST(PlaceWriteTest, AnExistingChunkKeepsWritableServersAndMovesTheRest) {
  const std::vector<uint32_t> current{0, 1, 2, 3, 4, 5};
  // DSS 1 and 4 are down; 6 and 7 are spare: the two positions move there,
  // every other position stays (so those servers clone their base copy).
  auto p = PlaceWrite({0, 2, 3, 5, 6, 7}, 6, 5, 3, 1, current);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ((*p)[0], 0u);
  EXPECT_EQ((*p)[2], 2u);
  EXPECT_EQ((*p)[3], 3u);
  EXPECT_EQ((*p)[5], 5u);
  EXPECT_EQ(std::set<uint32_t>({(*p)[1], (*p)[4]}), std::set<uint32_t>({6, 7}));
  // No spare: the positions of the down servers are left empty...
  p = PlaceWrite({0, 2, 3, 5}, 6, 4, 3, 1, current);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, (std::vector<uint32_t>{0, kNo, 2, 3, kNo, 5}));
  // ...and refused below the minimum.
  EXPECT_EQ(PlaceWrite({0, 2, 3, 5}, 6, 5, 3, 1, current).error().code(), Code::kUnavailable);
  // A position already empty gets a server the chunk does not use.
  p = PlaceWrite({0, 1, 2, 3, 4, 5, 6}, 6, 5, 3, 1, std::vector<uint32_t>{0, 1, kNo, 3, 4, 5});
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE((*p)[2] == 2 || (*p)[2] == 6) << (*p)[2];
  EXPECT_EQ(std::vector<uint32_t>(p->begin(), p->begin() + 2), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(std::vector<uint32_t>(p->begin() + 3, p->end()), (std::vector<uint32_t>{3, 4, 5}));
}

TEST(PlaceWriteTest, NeverTwoShardsOnOneServer) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; trial++) {
    const uint32_t n = 1 + rng() % 12, width = 1 + rng() % 8;
    std::vector<uint32_t> writable;
    for (uint32_t d = 0; d < n; d++)
      if (rng() % 3) writable.push_back(d);
    std::vector<uint32_t> current;
    if (rng() % 2)
      for (uint32_t s = 0; s < width; s++) current.push_back(rng() % 4 == 0 ? kNo : uint32_t(rng() % n));
    // A current placement may itself repeat a server (never written so, but
    // a forged map must not make placement repeat it).
    auto p = PlaceWrite(writable, width, 1, rng(), rng() % 100, current);
    if (writable.empty()) {
      EXPECT_FALSE(p.has_value());
      continue;
    }
    ASSERT_TRUE(p.has_value());
    std::set<uint32_t> uniq;
    for (uint32_t d : *p) {
      if (d == kNo) continue;
      EXPECT_TRUE(std::binary_search(writable.begin(), writable.end(), d));
      EXPECT_TRUE(uniq.insert(d).second) << "server " << d << " twice";
    }
    EXPECT_EQ(Placed(*p), std::min<size_t>(width, writable.size()));
  }
}

}  // namespace
}  // namespace rustfs::mds
