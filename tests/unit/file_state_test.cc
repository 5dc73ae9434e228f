// IntervalSet against a brute-force bitmap: after every Add, the set's
// intervals must be exactly the maximal runs of set bits, and Covers,
// Overlaps, min and max must agree with the bitmap.
#include "client/file_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace rustfs::client {
namespace {

struct Bitmap {
  std::vector<bool> bits;
  explicit Bitmap(size_t n) : bits(n, false) {}
  void Add(uint64_t s, uint64_t e) {
    for (uint64_t i = s; i < e; i++) bits[i] = true;
  }
  bool Covers(uint64_t s, uint64_t e) const {
    for (uint64_t i = s; i < e; i++)
      if (!bits[i]) return false;
    return true;
  }
  bool Overlaps(uint64_t s, uint64_t e) const {
    for (uint64_t i = s; i < e; i++)
      if (bits[i]) return true;
    return false;
  }
  // Maximal runs of set bits: touching ranges are one run.
  std::map<uint64_t, uint64_t> Runs() const {
    std::map<uint64_t, uint64_t> out;
    for (uint64_t i = 0; i < bits.size();) {
      if (!bits[i]) {
        i++;
        continue;
      }
      uint64_t j = i;
      while (j < bits.size() && bits[j]) j++;
      out[i] = j;
      i = j;
    }
    return out;
  }
};

void CheckAgainst(const IntervalSet& set, const Bitmap& ref, std::mt19937_64& rng) {
  auto runs = ref.Runs();
  ASSERT_EQ(set.intervals(), runs);
  ASSERT_EQ(set.empty(), runs.empty());
  if (!runs.empty()) {
    ASSERT_EQ(set.min(), runs.begin()->first);
    ASSERT_EQ(set.max(), runs.rbegin()->second);
  }
  const uint64_t n = ref.bits.size();
  for (int q = 0; q < 40; q++) {
    uint64_t s = rng() % (n + 1);
    uint64_t e = s + rng() % (n + 1 - s);
    ASSERT_EQ(set.Covers(s, e), ref.Covers(s, e)) << "Covers(" << s << "," << e << ")";
    if (s < e) {
      ASSERT_EQ(set.Overlaps(s, e), ref.Overlaps(s, e)) << "Overlaps(" << s << "," << e << ")";
    }
  }
  // Every single-byte query, too.
  for (uint64_t i = 0; i < n; i++) {
    ASSERT_EQ(set.Covers(i, i + 1), bool(ref.bits[i])) << i;
    ASSERT_EQ(set.Overlaps(i, i + 1), bool(ref.bits[i])) << i;
  }
}

TEST(IntervalSetTest, EmptySet) {
  IntervalSet s;
  EXPECT_TRUE(s.empty());
  EXPECT_FALSE(s.Covers(0, 1));
  EXPECT_TRUE(s.Covers(5, 5));  // an empty range is always covered
  EXPECT_FALSE(s.Overlaps(0, 100));
  s.Add(10, 10);  // empty adds are ignored
  s.Add(20, 10);
  EXPECT_TRUE(s.empty());
}

TEST(IntervalSetTest, TouchingIntervalsMerge) {
  IntervalSet s;
  s.Add(0, 10);
  s.Add(10, 20);
  EXPECT_EQ(s.intervals(), (std::map<uint64_t, uint64_t>{{0, 20}}));
  s.Add(30, 40);
  s.Add(25, 30);
  EXPECT_EQ(s.intervals(), (std::map<uint64_t, uint64_t>{{0, 20}, {25, 40}}));
  s.Add(20, 25);  // bridges both
  EXPECT_EQ(s.intervals(), (std::map<uint64_t, uint64_t>{{0, 40}}));
  s.Add(50, 60);
  s.Add(70, 80);
  s.Add(90, 100);
  s.Add(55, 95);  // swallows several
  EXPECT_EQ(s.intervals(), (std::map<uint64_t, uint64_t>{{0, 40}, {50, 100}}));
  s.Add(60, 70);  // already inside
  EXPECT_EQ(s.intervals(), (std::map<uint64_t, uint64_t>{{0, 40}, {50, 100}}));
  EXPECT_TRUE(s.Covers(0, 40));
  EXPECT_FALSE(s.Covers(0, 41));
  EXPECT_FALSE(s.Covers(39, 51));
  EXPECT_TRUE(s.Overlaps(39, 51));
  EXPECT_FALSE(s.Overlaps(40, 50));
  EXPECT_EQ(s.min(), 0u);
  EXPECT_EQ(s.max(), 100u);
}

TEST(IntervalSetTest, LargeOffsets) {
  IntervalSet s;
  const uint64_t big = uint64_t{1} << 62;
  s.Add(big, big + 4096);
  s.Add(big - 4096, big);
  EXPECT_EQ(s.intervals(), (std::map<uint64_t, uint64_t>{{big - 4096, big + 4096}}));
  EXPECT_TRUE(s.Covers(big - 1, big + 1));
  EXPECT_FALSE(s.Overlaps(0, big - 4096));
  EXPECT_TRUE(s.Overlaps(0, big - 4095));
}

TEST(IntervalSetTest, RandomAddsMatchBitmap) {
  std::mt19937_64 rng(99);
  for (int round = 0; round < 400; round++) {
    const uint64_t n = 16 + rng() % 200;
    IntervalSet set;
    Bitmap ref(n);
    const int adds = 1 + rng() % 25;
    for (int a = 0; a < adds; a++) {
      uint64_t s = rng() % (n + 1);
      uint64_t len = (round % 3 == 0) ? rng() % 4 : rng() % (n / 3 + 1);
      uint64_t e = std::min<uint64_t>(n, s + len);
      if (rng() % 10 == 0) std::swap(s, e);  // reversed: ignored
      set.Add(s, e);
      if (s < e) ref.Add(s, e);
      CheckAgainst(set, ref, rng);
      if (HasFatalFailure()) {
        ADD_FAILURE() << "round " << round << " add " << a << " [" << s << "," << e << ")";
        return;
      }
    }
  }
}

}  // namespace
}  // namespace rustfs::client
