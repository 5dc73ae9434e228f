// CoalesceReads against a brute-force reference: the same reads, covered
// exactly, and runs split exactly where the gap exceeds the threshold.
#include "layout/coalesce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace rustfs::layout {
namespace {

TEST(CoalesceTest, LldExample) {
  // LLD-002 §5.2: three 512-byte reads 88 bytes apart -> one read of 1712.
  auto c = CoalesceReads({{1000, 512, 0}, {1600, 512, 1}, {2200, 512, 2}}, 16384);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].offset, 1000u);
  EXPECT_EQ(c[0].length, 1712u);
  EXPECT_EQ(c[0].members.size(), 3u);
}

TEST(CoalesceTest, GapsAroundTheThreshold) {
  const uint64_t t = 16384;
  // A gap of exactly t merges; t + 1 does not.
  EXPECT_EQ(CoalesceReads({{0, 4096, 0}, {4096 + t, 4096, 1}}, t).size(), 1u);
  EXPECT_EQ(CoalesceReads({{0, 4096, 0}, {4096 + t + 1, 4096, 1}}, t).size(), 2u);
  EXPECT_EQ(CoalesceReads({{0, 4096, 0}, {4096, 4096, 1}}, 0).size(), 1u);
  EXPECT_EQ(CoalesceReads({{0, 4096, 0}, {4097, 4096, 1}}, 0).size(), 2u);
  EXPECT_TRUE(CoalesceReads({}, t).empty());
}

TEST(CoalesceTest, MatchesBruteForce) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 2000; round++) {
    uint64_t gap = std::vector<uint64_t>{0, 1, 512, 4096, 16384}[rng() % 5];
    size_t n = 1 + rng() % 30;
    std::vector<RangeRead> reads;
    for (size_t i = 0; i < n; i++) reads.push_back({rng() % 200000, 1 + rng() % 20000, i});
    auto runs = CoalesceReads(reads, gap);
    // Every read appears exactly once, inside its run.
    std::vector<int> seen(n, 0);
    for (auto& c : runs)
      for (auto& m : c.members) {
        seen[m.id]++;
        ASSERT_GE(m.offset, c.offset);
        ASSERT_LE(m.offset + m.length, c.end());
      }
    for (int s : seen) ASSERT_EQ(s, 1);
    // Runs are sorted, and separated by more than the gap; inside a run
    // the union of members has no hole larger than the gap, and the run is
    // exactly the members' hull.
    for (size_t i = 0; i < runs.size(); i++) {
      uint64_t lo = UINT64_MAX, hi = 0;
      auto ms = runs[i].members;
      std::sort(ms.begin(), ms.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
      uint64_t reach = ms[0].offset;
      for (auto& m : ms) {
        ASSERT_LE(m.offset, reach + gap);
        reach = std::max(reach, m.offset + m.length);
        lo = std::min(lo, m.offset);
        hi = std::max(hi, m.offset + m.length);
      }
      ASSERT_EQ(runs[i].offset, lo);
      ASSERT_EQ(runs[i].end(), hi);
      if (i > 0) ASSERT_GT(runs[i].offset, runs[i - 1].end() + gap);
    }
  }
}

}  // namespace
}  // namespace rustfs::layout
