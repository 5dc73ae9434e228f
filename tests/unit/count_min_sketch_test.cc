// The count-min sketch is checked against exact counts: it may overestimate
// (collisions) but must never underestimate before a reset, it must halve
// exactly at the sample size, and a key's first occurrence must land in the
// doorkeeper only. Where a test needs exact estimates it uses a sketch far
// wider than its key count (2^16 counters per row for at most a few thousand
// keys) and says so.
#include "cache/count_min_sketch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "cache/hash.h"

namespace rustfs::cache {
namespace {

CountMinSketch::Options Wide(uint64_t sample_size) {
  return CountMinSketch::Options{.width = 1 << 16, .sample_size = sample_size, .doorkeeper_bits = 1 << 20};
}

// Increments random keys with random true counts (some above 15) in a random
// interleaving, staying below the sample size, then checks every estimate.
void CheckNeverBelowTrueCount(CountMinSketch& sketch, int keys, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::map<uint64_t, uint32_t> truth;
  std::vector<uint64_t> stream;
  for (int i = 0; i < keys; ++i) {
    const uint64_t h = Mix64(rng());
    const uint32_t count = 1 + rng() % 20;
    truth[h] = count;
    stream.insert(stream.end(), count, h);
  }
  ASSERT_LT(stream.size(), sketch.sample_size()) << "the test must stay inside one sample period";
  std::shuffle(stream.begin(), stream.end(), rng);
  for (uint64_t h : stream) sketch.Increment(h);
  ASSERT_EQ(sketch.resets(), 0u);
  for (const auto& [h, count] : truth) {
    // 15 in the counters plus the doorkeeper bit: 16 is the most it can say.
    EXPECT_GE(sketch.Estimate(h), std::min<uint32_t>(count, 16)) << "true count " << count;
    EXPECT_LE(sketch.Estimate(h), 16u);
  }
}

TEST(CountMinSketchTest, SizingFollowsExpectedItems) {
  const CountMinSketch::Options o = CountMinSketch::OptionsForItems(1000);
  EXPECT_EQ(o.width, 4096u);  // 4 * CeilPow2(1000)
  EXPECT_EQ(o.sample_size, 32000u);
  EXPECT_EQ(o.doorkeeper_bits, 131072u);  // CeilPow2(4 * 32000)
  CountMinSketch sketch(1000);
  EXPECT_EQ(sketch.width(), 4096u);
  EXPECT_EQ(sketch.sample_size(), 32000u);
  // 4 rows x 4096 4-bit counters + 128 Ki doorkeeper bits.
  EXPECT_EQ(sketch.memory_bytes(), 4u * 4096 / 2 + 131072 / 8);
  // Degenerate sizes are rounded up, not rejected.
  CountMinSketch tiny(CountMinSketch::Options{.width = 3, .sample_size = 0, .doorkeeper_bits = 5});
  EXPECT_EQ(tiny.width(), 16u);
  EXPECT_EQ(tiny.sample_size(), 1u);
  EXPECT_EQ(tiny.doorkeeper_bits(), 64u);
}

TEST(CountMinSketchTest, FreshSketchEstimatesZero) {
  CountMinSketch sketch(1000);
  std::mt19937_64 rng(1);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(sketch.Estimate(Mix64(rng())), 0u);
}

TEST(CountMinSketchTest, NeverBelowTrueCountWithDefaultSizing) {
  CountMinSketch sketch(1000);  // width 4096: real collisions among 450 keys
  CheckNeverBelowTrueCount(sketch, 450, 7);
}

TEST(CountMinSketchTest, NeverBelowTrueCountUnderHeavyCollisions) {
  // 16 counters per row for 300 keys: nearly every counter is shared, so
  // estimates are poor, but the min over rows still bounds from above.
  CountMinSketch sketch(CountMinSketch::Options{.width = 16, .sample_size = 1 << 20, .doorkeeper_bits = 64});
  CheckNeverBelowTrueCount(sketch, 300, 11);
}

TEST(CountMinSketchTest, DefaultSizingIsAccurateOnAverage) {
  // A cache of 1000 entries sees ~1000 distinct hot keys: the sketch should
  // be exact for nearly all of them, or admission would be noise.
  CountMinSketch sketch(1000);
  std::mt19937_64 rng(3);
  std::map<uint64_t, uint32_t> truth;
  uint64_t total = 0;
  while (total + 15 < sketch.sample_size()) {
    const uint64_t h = Mix64(rng() % 1000);
    ++truth[h];
    sketch.Increment(h);
    ++total;
  }
  uint64_t error = 0;
  for (const auto& [h, count] : truth) error += sketch.Estimate(h) - std::min<uint32_t>(count, 16);
  EXPECT_LT(static_cast<double>(error) / truth.size(), 0.1);
}

TEST(CountMinSketchTest, HalvesExactlyAtSampleSize) {
  constexpr uint64_t kSample = 1000;
  CountMinSketch sketch(Wide(kSample));  // wide: estimates below are exact
  const uint64_t a = Mix64(1), b = Mix64(2);
  for (int i = 0; i < 12; ++i) sketch.Increment(a);  // doorkeeper + 11 in the counters
  for (int i = 0; i < 40; ++i) sketch.Increment(b);  // doorkeeper + saturated 15
  EXPECT_EQ(sketch.Estimate(a), 12u);
  EXPECT_EQ(sketch.Estimate(b), 16u);

  // Distinct one-shot keys up to one increment short of the sample: they
  // only touch the doorkeeper, so a and b keep their exact counts.
  uint64_t next = 1000;
  while (sketch.additions() < kSample - 1) sketch.Increment(Mix64(next++));
  EXPECT_EQ(sketch.resets(), 0u);
  EXPECT_EQ(sketch.Estimate(a), 12u);
  EXPECT_EQ(sketch.Estimate(b), 16u);
  const uint64_t one_shot = Mix64(1000);
  EXPECT_EQ(sketch.Estimate(one_shot), 1u);

  sketch.Increment(Mix64(next++));  // the kSample-th increment
  EXPECT_EQ(sketch.resets(), 1u);
  EXPECT_EQ(sketch.additions(), 0u);
  EXPECT_EQ(sketch.Estimate(a), 11u / 2);  // counters halve, doorkeeper bit is gone
  EXPECT_EQ(sketch.Estimate(b), 15u / 2);
  EXPECT_EQ(sketch.Estimate(one_shot), 0u);  // it lived in the doorkeeper only

  // And again one sample later.
  for (uint64_t i = 0; i < kSample; ++i) sketch.Increment(Mix64(next++));
  EXPECT_EQ(sketch.resets(), 2u);
  EXPECT_EQ(sketch.Estimate(a), 5u / 2);
  EXPECT_EQ(sketch.Estimate(b), 7u / 2);
}

TEST(CountMinSketchTest, HalvingUnderCollisionsIsHalvingOfTheMin) {
  // floor(x / 2) is monotone, so the min over halved rows is the halved min:
  // even a colliding estimate halves exactly.
  CountMinSketch sketch(CountMinSketch::Options{.width = 16, .sample_size = 1 << 20, .doorkeeper_bits = 1 << 16});
  std::mt19937_64 rng(5);
  std::vector<uint64_t> keys;
  for (int i = 0; i < 200; ++i) keys.push_back(Mix64(rng()));
  for (int i = 0; i < 2000; ++i) sketch.Increment(keys[rng() % keys.size()]);
  std::vector<uint32_t> before;
  for (uint64_t h : keys) before.push_back(sketch.Estimate(h));
  sketch.Reset();
  for (size_t i = 0; i < keys.size(); ++i) {
    // Each key was drawn ~10 times, so it is in the doorkeeper (a Bloom
    // filter has no false negatives) and loses exactly that +1.
    ASSERT_GE(before[i], 1u);
    EXPECT_EQ(sketch.Estimate(keys[i]), (before[i] - 1) / 2) << "key " << i;
  }
}

TEST(CountMinSketchTest, FirstOccurrenceOnlySetsTheDoorkeeper) {
  CountMinSketch sketch(Wide(1 << 20));
  const uint64_t k = Mix64(42);
  sketch.Increment(k);
  EXPECT_EQ(sketch.Estimate(k), 1u);  // the doorkeeper's +1
  sketch.Reset();
  EXPECT_EQ(sketch.Estimate(k), 0u);  // nothing had reached the counters

  sketch.Increment(k);
  sketch.Increment(k);
  sketch.Increment(k);
  EXPECT_EQ(sketch.Estimate(k), 3u);  // doorkeeper + 2
  sketch.Reset();
  EXPECT_EQ(sketch.Estimate(k), 1u);  // 2 / 2; the doorkeeper was cleared

  // After the reset the doorkeeper must be passed again: the next occurrence
  // sets its bit, and only the one after that reaches the counters.
  sketch.Increment(k);
  EXPECT_EQ(sketch.Estimate(k), 2u);
  sketch.Increment(k);
  EXPECT_EQ(sketch.Estimate(k), 3u);
}

TEST(CountMinSketchTest, OneShotKeysDoNotInflateCounters) {
  // Only 16 counters per row, so any key reaching the counters would show up
  // in the estimate of almost every other key. 2000 keys seen once each stay
  // in the (large) doorkeeper: every estimate is at most the doorkeeper's 1.
  CountMinSketch sketch(CountMinSketch::Options{.width = 16, .sample_size = 1 << 20, .doorkeeper_bits = 1 << 20});
  for (uint64_t i = 0; i < 2000; ++i) sketch.Increment(Mix64(i));
  for (uint64_t i = 0; i < 4000; ++i) EXPECT_LE(sketch.Estimate(Mix64(i)), 1u);
  for (uint64_t i = 0; i < 2000; ++i) EXPECT_EQ(sketch.Estimate(Mix64(i)), 1u);  // no false negatives
}

TEST(CountMinSketchTest, ClearForgetsEverything) {
  CountMinSketch sketch(100);
  for (int i = 0; i < 20; ++i) sketch.Increment(Mix64(9));
  sketch.Clear();
  EXPECT_EQ(sketch.Estimate(Mix64(9)), 0u);
  EXPECT_EQ(sketch.additions(), 0u);
}

}  // namespace
}  // namespace rustfs::cache
