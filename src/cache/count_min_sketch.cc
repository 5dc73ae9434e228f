#include "cache/count_min_sketch.h"

#include <algorithm>
#include <bit>

#include "cache/hash.h"

namespace rustfs::cache {

namespace {

// Odd multipliers for multiply-shift hashing, one per counter row and one per
// doorkeeper probe. Distinct multipliers make the rows' collisions close to
// independent, which is what the min over rows relies on.
constexpr uint64_t kRowSeeds[CountMinSketch::kDepth] = {
    0x9e3779b97f4a7c15ULL, 0xc2b2ae3d27d4eb4fULL, 0x165667b19e3779f9ULL, 0xd6e8feb86659fd93ULL};
constexpr int kDoorkeeperProbes = 3;
constexpr uint64_t kDoorkeeperSeeds[kDoorkeeperProbes] = {
    0xbf58476d1ce4e5b9ULL, 0x94d049bb133111ebULL, 0xff51afd7ed558ccdULL};

// Keeps the low 3 bits of every nibble after a shift by one: halves 16
// packed 4-bit counters at once.
constexpr uint64_t kHalveMask = 0x7777777777777777ULL;

int ShiftFor(uint64_t pow2) { return 64 - std::countr_zero(pow2); }

}  // namespace

CountMinSketch::Options CountMinSketch::OptionsForItems(uint64_t expected_items) {
  const uint64_t n = std::max<uint64_t>(expected_items, 1);
  Options o;
  o.width = std::max<uint64_t>(16, 4 * CeilPow2(n));
  o.sample_size = kSamplePerItem * n;
  o.doorkeeper_bits = std::max<uint64_t>(64, CeilPow2(4 * o.sample_size));
  return o;
}

CountMinSketch::CountMinSketch(uint64_t expected_items)
    : CountMinSketch(OptionsForItems(expected_items)) {}

CountMinSketch::CountMinSketch(const Options& options)
    : width_(std::max<uint64_t>(16, CeilPow2(options.width))),
      width_shift_(ShiftFor(width_)),
      sample_size_(std::max<uint64_t>(1, options.sample_size)),
      doorkeeper_bits_(std::max<uint64_t>(64, CeilPow2(options.doorkeeper_bits))),
      doorkeeper_shift_(ShiftFor(doorkeeper_bits_)),
      table_(kDepth * width_ / kCountersPerWord, 0),
      doorkeeper_(doorkeeper_bits_ / 64, 0) {}

uint64_t CountMinSketch::CounterIndex(int row, uint64_t hash) const {
  const uint64_t column = (hash * kRowSeeds[row]) >> width_shift_;
  return static_cast<uint64_t>(row) * width_ + column;
}

uint32_t CountMinSketch::CounterAt(uint64_t index) const {
  const uint64_t word = table_[index / kCountersPerWord];
  return static_cast<uint32_t>((word >> ((index % kCountersPerWord) * 4)) & 0xF);
}

bool CountMinSketch::DoorkeeperContains(uint64_t hash) const {
  for (int i = 0; i < kDoorkeeperProbes; ++i) {
    const uint64_t bit = (hash * kDoorkeeperSeeds[i]) >> doorkeeper_shift_;
    if ((doorkeeper_[bit / 64] & (uint64_t{1} << (bit % 64))) == 0) return false;
  }
  return true;
}

bool CountMinSketch::DoorkeeperTestAndSet(uint64_t hash) {
  bool present = true;
  for (int i = 0; i < kDoorkeeperProbes; ++i) {
    const uint64_t bit = (hash * kDoorkeeperSeeds[i]) >> doorkeeper_shift_;
    uint64_t& word = doorkeeper_[bit / 64];
    const uint64_t mask = uint64_t{1} << (bit % 64);
    if ((word & mask) == 0) {
      present = false;
      word |= mask;
    }
  }
  return present;
}

void CountMinSketch::Increment(uint64_t hash) {
  if (DoorkeeperTestAndSet(hash)) {
    for (int row = 0; row < kDepth; ++row) {
      const uint64_t index = CounterIndex(row, hash);
      if (CounterAt(index) < kMaxCounter) {
        table_[index / kCountersPerWord] += uint64_t{1} << ((index % kCountersPerWord) * 4);
      }
    }
  }
  if (++additions_ >= sample_size_) Reset();
}

uint32_t CountMinSketch::Estimate(uint64_t hash) const {
  uint32_t min = kMaxCounter;
  for (int row = 0; row < kDepth; ++row) min = std::min(min, CounterAt(CounterIndex(row, hash)));
  return min + (DoorkeeperContains(hash) ? 1 : 0);
}

void CountMinSketch::Reset() {
  for (uint64_t& word : table_) word = (word >> 1) & kHalveMask;
  std::fill(doorkeeper_.begin(), doorkeeper_.end(), 0);
  additions_ = 0;
  ++resets_;
}

void CountMinSketch::Clear() {
  std::fill(table_.begin(), table_.end(), 0);
  std::fill(doorkeeper_.begin(), doorkeeper_.end(), 0);
  additions_ = 0;
}

}  // namespace rustfs::cache
