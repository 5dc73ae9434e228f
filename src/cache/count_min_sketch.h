// Count-min sketch of 4-bit counters with a doorkeeper: the frequency
// estimator behind W-TinyLFU admission (LLD-002 §3.1, Einziger et al.,
// "TinyLFU: A Highly Efficient Cache Admission Policy").
//
// Admission only has to rank a candidate against a victim, so small
// saturating counters suffice, and "recent" frequency matters more than
// all-time frequency: after every `sample_size` increments all counters are
// halved (the "reset"), which ages out keys that were hot long ago.
//
// The doorkeeper is a Bloom filter in front of the counters. Most keys of a
// skewed workload are seen once per sample period; their first occurrence
// only sets doorkeeper bits, so they never occupy counters and do not
// inflate the estimates of the keys they would collide with.
//
// Not thread-safe: owned by one policy, which is guarded by its shard lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rustfs::cache {

class CountMinSketch {
 public:
  static constexpr int kDepth = 4;              // rows; an estimate is the min over rows
  static constexpr uint32_t kMaxCounter = 15;   // 4-bit saturating counters
  static constexpr int kCountersPerWord = 16;   // 16 x 4 bits packed in one uint64_t
  static constexpr uint64_t kSamplePerItem = 32;  // sample period per expected item

  struct Options {
    uint64_t width = 0;            // counters per row; power of two, >= 16
    uint64_t sample_size = 0;      // increments between two halvings; > 0
    uint64_t doorkeeper_bits = 0;  // Bloom filter size; power of two, >= 64
  };

  // Sizing for a cache that holds about `expected_items` entries:
  //   width           = 4 * CeilPow2(expected_items)   (8 bytes of counters per item)
  //   sample_size     = kSamplePerItem * expected_items (the TinyLFU paper uses
  //                     W = 10 C; a longer history separates keys of a flat
  //                     Zipf (0.8) better: cache_sim, 10 -> 32 lifts W-TinyLFU
  //                     by 0.9-1.4 points there and changes no other trace by
  //                     more than noise)
  //   doorkeeper_bits = CeilPow2(4 * sample_size)      (>= 4 bits per increment of a period,
  //                                                     so few false positives even when
  //                                                     every key of a period is new)
  static Options OptionsForItems(uint64_t expected_items);

  explicit CountMinSketch(uint64_t expected_items);
  // Options must satisfy the constraints above; bad values are rounded up
  // to the nearest valid ones (never a crash on a misconfiguration).
  explicit CountMinSketch(const Options& options);

  // Records one occurrence of the key whose 64-bit hash is `hash` (callers
  // pass a well-mixed hash, e.g. Mix64(key)). The first occurrence in a
  // sample period only sets the doorkeeper; later ones increment the
  // counters (saturating at 15). Every call counts towards the sample; the
  // call that reaches `sample_size` triggers Reset().
  void Increment(uint64_t hash);

  // Estimated occurrences of `hash` in the current period: min over the rows,
  // plus 1 if the doorkeeper holds it. In [0, 16]. Never below the true count
  // (while the true count is <= 15 and no reset happened since); above it
  // only through hash collisions.
  uint32_t Estimate(uint64_t hash) const;

  // Ages the sketch now: halves every counter (rounding down) and clears the
  // doorkeeper. Called automatically every `sample_size` increments.
  void Reset();

  // Forgets everything (counters, doorkeeper, additions).
  void Clear();

  uint64_t width() const { return width_; }
  uint64_t sample_size() const { return sample_size_; }
  uint64_t doorkeeper_bits() const { return doorkeeper_bits_; }
  uint64_t additions() const { return additions_; }  // increments since the last reset
  uint64_t resets() const { return resets_; }        // halvings so far
  size_t memory_bytes() const { return (table_.size() + doorkeeper_.size()) * sizeof(uint64_t); }

 private:
  uint64_t CounterIndex(int row, uint64_t hash) const;
  uint32_t CounterAt(uint64_t index) const;
  // Returns true if all doorkeeper bits of `hash` were already set; sets them.
  bool DoorkeeperTestAndSet(uint64_t hash);
  bool DoorkeeperContains(uint64_t hash) const;

  uint64_t width_;
  int width_shift_;  // 64 - log2(width): multiply-shift hashing keeps the top bits
  uint64_t sample_size_;
  uint64_t doorkeeper_bits_;
  int doorkeeper_shift_;
  uint64_t additions_ = 0;
  uint64_t resets_ = 0;
  std::vector<uint64_t> table_;       // kDepth rows of width_/16 words, row-major
  std::vector<uint64_t> doorkeeper_;  // doorkeeper_bits_/64 words
};

}  // namespace rustfs::cache
