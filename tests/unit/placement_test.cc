// PlaceChunk: distinct DSS out of the live set, refusal when too few are
// alive, and a fair spread of shards over every DSS across many chunks.
#include "mds/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
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
