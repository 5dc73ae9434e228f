// W-TinyLFU (Einziger, Friedman, Manes, "TinyLFU: A Highly Efficient Cache
// Admission Policy", 2017), the fragment cache's default policy (LLD-002
// §3.1): a frequency-admission cache, so a flood of one-shot reads cannot
// push out fragments that are read over and over.
//
// Regions, all LRU-ordered, sized in bytes from the capacity C:
//   window     C * window_percent / 100 (default 1%)
//   main       C - window, split into
//     protected  main * protected_percent / 100 (default 80%)
//     probation  the rest of main
//
// Rules (the unit test's reference model implements exactly these):
//   Insert(new key)  the key enters the window at the MRU end. While the
//                    window is over its size and holds 2+ entries, its LRU
//                    entry (the candidate) moves to the probation MRU end;
//                    while the cache is then over C, the candidate competes
//                    with the victim, the probation LRU entry (the protected
//                    LRU one if probation holds only the candidate): the
//                    candidate stays iff frequency(candidate) >
//                    frequency(victim), and the loser is evicted. A tie
//                    rejects the candidate, because the victim's estimate has
//                    already survived a contest and the candidate is most
//                    often a one-shot key. While the cache is not full,
//                    candidates enter the main region without a contest.
//   Touch(hit)       window and protected entries move to their MRU end; a
//                    probation entry is promoted to the protected MRU end.
//                    While protected is over its size, its LRU entry is
//                    demoted to the probation MRU end.
//   Anything else    over C (a single window entry larger than the window,
//                    a grown charge) evicts LRU entries of probation, then
//                    protected, then the window, without a contest.
// The window always keeps at least its newest entry, so a tiny cache still
// admits through it. Frequency is the count-min sketch estimate (with
// doorkeeper and halving every CountMinSketch::kSamplePerItem (32) x expected_entries accesses) of the keys'
// RecordAccess calls. Caffeine's adaptive window sizing and its random
// admission of warm candidates (a hash-flooding defence) are not
// implemented: the window is a fixed fraction, and decisions are
// deterministic, which the reference-model test relies on.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/count_min_sketch.h"
#include "cache/policy.h"

namespace rustfs::cache {

class WTinyLfuPolicy final : public Policy {
 public:
  struct Options {
    uint64_t capacity_bytes = 0;
    // About how many entries fit in capacity_bytes; sizes the sketch and its
    // sample (kSamplePerItem x this many accesses between halvings). 0 = capacity_bytes
    // (unit charges).
    uint64_t expected_entries = 0;
    uint32_t window_percent = 1;      // of capacity_bytes, 0..100
    uint32_t protected_percent = 80;  // of the main region, 0..100
    // Overrides the sizing derived from expected_entries (tests use a wide
    // sketch to make estimates exact on a tiny key space).
    std::optional<CountMinSketch::Options> sketch{};
  };

  enum class Segment { kNone, kWindow, kProbation, kProtected };

  WTinyLfuPolicy(uint64_t capacity_bytes, uint64_t expected_entries);
  explicit WTinyLfuPolicy(const Options& options);

  void RecordAccess(uint64_t key) override;
  bool Contains(uint64_t key) const override { return index_.contains(key); }
  void Touch(uint64_t key) override;
  void Insert(uint64_t key, uint64_t charge, std::vector<uint64_t>* evicted) override;
  void Erase(uint64_t key) override;
  uint64_t used_bytes() const override { return window_bytes_ + probation_bytes_ + protected_bytes_; }
  uint64_t capacity_bytes() const override { return capacity_; }
  size_t size() const override { return index_.size(); }
  std::string_view name() const override { return "tinylfu"; }

  // The admission estimate of `key` (0..16).
  uint32_t Frequency(uint64_t key) const;
  Segment SegmentOf(uint64_t key) const;
  // Keys of one region from LRU to MRU (tests and debugging).
  std::vector<uint64_t> Keys(Segment segment) const;

  uint64_t window_capacity_bytes() const { return window_cap_; }
  uint64_t protected_capacity_bytes() const { return protected_cap_; }
  uint64_t window_bytes() const { return window_bytes_; }
  uint64_t probation_bytes() const { return probation_bytes_; }
  uint64_t protected_bytes() const { return protected_bytes_; }
  // Contests won by the candidate / by the victim.
  uint64_t admissions() const { return admissions_; }
  uint64_t rejections() const { return rejections_; }
  const CountMinSketch& sketch() const { return sketch_; }

 private:
  struct Node {
    uint64_t key;
    uint64_t charge;
    Segment segment;
  };
  using List = std::list<Node>;

  List& ListOf(Segment s);
  uint64_t& BytesOf(Segment s);
  // Moves `it` to the MRU end of segment `to`, keeping byte totals right.
  void MoveTo(List::iterator it, Segment to);
  void Remove(List::iterator it);
  void DemoteProtectedOverflow();
  void AdmitWindowCandidate(std::vector<uint64_t>* evicted);
  void Rebalance(std::vector<uint64_t>* evicted);

  uint64_t capacity_;
  uint64_t window_cap_;
  uint64_t protected_cap_;
  uint64_t window_bytes_ = 0;
  uint64_t probation_bytes_ = 0;
  uint64_t protected_bytes_ = 0;
  uint64_t admissions_ = 0;
  uint64_t rejections_ = 0;
  List window_;     // front = LRU
  List probation_;  // front = LRU: the victim
  List protected_;  // front = LRU
  std::unordered_map<uint64_t, List::iterator> index_;
  CountMinSketch sketch_;
};

}  // namespace rustfs::cache
