// LastReads against a deque that keeps the newest `capacity` values.
#include "client/last_reads.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>

namespace rustfs::client {
namespace {

TEST(LastReadsTest, KeepsTheNewestInOrder) {
  std::mt19937_64 rng(3);
  for (size_t capacity : {1, 2, 7, 8}) {
    LastReads<uint64_t, 8> w(capacity);
    std::deque<uint64_t> model;
    for (int i = 0; i < 100; i++) {
      const uint64_t v = rng();
      w.Push(v);
      model.push_back(v);
      if (model.size() > capacity) model.pop_front();
      ASSERT_EQ(w.size(), model.size());
      ASSERT_EQ(w.newest(), v);
      for (size_t k = 0; k < model.size(); k++) ASSERT_EQ(w[k], model[k]) << "capacity " << capacity;
    }
  }
}

TEST(LastReadsTest, CapacityIsClampedAndEntriesAreWritable) {
  LastReads<int, 4> big(100), none(0);
  for (int i = 0; i < 10; i++) big.Push(i), none.Push(i);
  EXPECT_EQ(big.size(), 4u);  // at most kMax
  EXPECT_EQ(big[0], 6);
  EXPECT_EQ(none.size(), 1u);  // at least one
  EXPECT_EQ(none.newest(), 9);
  EXPECT_TRUE((LastReads<int, 4>(3).empty()));
  big[0] = 42;  // a detector re-marks what it remembers
  EXPECT_EQ(big[0], 42);
}

}  // namespace
}  // namespace rustfs::client
