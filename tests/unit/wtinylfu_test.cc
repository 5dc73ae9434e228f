// W-TinyLFU is checked step by step against a reference model written here
// from the rules in wtinylfu.h, with plain vectors and exact frequency
// counts. The counts follow the sketch's semantics exactly (doorkeeper bit
// on the first occurrence, 4-bit saturating counters, halving plus
// doorkeeper clear every sample_size accesses), so that with a sketch wide
// enough to have no collisions on the tiny key space (2^16 counters per row
// and 2^20 doorkeeper bits for 24 keys), estimates and exact counts agree.
// The test asserts that agreement at every step, so a collision would show
// up as such rather than as a policy mismatch.
//
// Scan resistance is shown on the same scenario for W-TinyLFU and LRU: the
// LRU run loses the hot set, which shows the check can fail.
#include "cache/wtinylfu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cache/lru.h"
#include "cache/policy.h"

namespace rustfs::cache {
namespace {

using Segment = WTinyLfuPolicy::Segment;

class ReferenceModel {
 public:
  ReferenceModel(uint64_t capacity, uint32_t window_percent, uint32_t protected_percent,
                 uint64_t sample_size)
      : capacity_(capacity), sample_size_(sample_size) {
    window_cap_ = capacity * window_percent / 100;
    protected_cap_ = (capacity - window_cap_) * protected_percent / 100;
  }

  void RecordAccess(uint64_t key) {
    if (!door_.contains(key)) {
      door_.insert(key);
    } else {
      counts_[key] = std::min<uint32_t>(counts_[key] + 1, 15);
    }
    if (++additions_ == sample_size_) {
      for (auto& [k, c] : counts_) c /= 2;
      door_.clear();
      additions_ = 0;
    }
  }

  uint32_t Frequency(uint64_t key) const {
    auto it = counts_.find(key);
    return (it == counts_.end() ? 0 : it->second) + (door_.contains(key) ? 1 : 0);
  }

  bool Contains(uint64_t key) const { return Find(key) != nullptr; }

  void Touch(uint64_t key) {
    for (auto* list : {&window_, &protected_}) {
      if (auto it = Position(*list, key); it != list->end()) {
        Item item = *it;
        list->erase(it);
        list->push_back(item);
        return;
      }
    }
    if (auto it = Position(probation_, key); it != probation_.end()) {
      Item item = *it;
      probation_.erase(it);
      protected_.push_back(item);
      DemoteProtected();
    }
  }

  std::vector<uint64_t> Insert(uint64_t key, uint64_t charge) {
    std::vector<uint64_t> evicted;
    if (charge > capacity_) {
      Erase(key);
      evicted.push_back(key);
      return evicted;
    }
    if (Item* item = Find(key)) {
      item->charge = charge;
      Touch(key);
    } else {
      window_.push_back(Item{key, charge});
    }
    DemoteProtected();
    while (Bytes(window_) > window_cap_ && window_.size() >= 2) {
      const Item candidate = window_.front();
      window_.erase(window_.begin());
      probation_.push_back(candidate);
      while (Used() > capacity_) {
        std::vector<Item>* victim_list = nullptr;
        if (probation_.front().key != candidate.key) {
          victim_list = &probation_;
        } else if (!protected_.empty()) {
          victim_list = &protected_;
        }
        if (victim_list == nullptr || Frequency(candidate.key) <= Frequency(victim_list->front().key)) {
          Erase(candidate.key);
          evicted.push_back(candidate.key);
          break;
        }
        evicted.push_back(victim_list->front().key);
        victim_list->erase(victim_list->begin());
      }
    }
    while (Used() > capacity_) {
      std::vector<Item>& from = !probation_.empty() ? probation_ : !protected_.empty() ? protected_ : window_;
      evicted.push_back(from.front().key);
      from.erase(from.begin());
    }
    return evicted;
  }

  void Erase(uint64_t key) {
    for (auto* list : {&window_, &probation_, &protected_}) {
      if (auto it = Position(*list, key); it != list->end()) list->erase(it);
    }
  }

  std::vector<uint64_t> Keys(Segment s) const {
    const std::vector<Item>& list = s == Segment::kWindow ? window_ : s == Segment::kProbation ? probation_ : protected_;
    std::vector<uint64_t> out;
    for (const Item& i : list) out.push_back(i.key);
    return out;
  }

  uint64_t Used() const { return Bytes(window_) + Bytes(probation_) + Bytes(protected_); }

 private:
  struct Item {
    uint64_t key;
    uint64_t charge;
  };

  static uint64_t Bytes(const std::vector<Item>& list) {
    uint64_t sum = 0;
    for (const Item& i : list) sum += i.charge;
    return sum;
  }
  static std::vector<Item>::iterator Position(std::vector<Item>& list, uint64_t key) {
    return std::find_if(list.begin(), list.end(), [&](const Item& i) { return i.key == key; });
  }
  Item* Find(uint64_t key) {
    for (auto* list : {&window_, &probation_, &protected_}) {
      if (auto it = Position(*list, key); it != list->end()) return &*it;
    }
    return nullptr;
  }
  const Item* Find(uint64_t key) const { return const_cast<ReferenceModel*>(this)->Find(key); }
  void DemoteProtected() {
    while (Bytes(protected_) > protected_cap_ && !protected_.empty()) {
      probation_.push_back(protected_.front());
      protected_.erase(protected_.begin());
    }
  }

  uint64_t capacity_;
  uint64_t sample_size_;
  uint64_t window_cap_;
  uint64_t protected_cap_;
  std::vector<Item> window_, probation_, protected_;  // front = LRU
  std::map<uint64_t, uint32_t> counts_;
  std::set<uint64_t> door_;
  uint64_t additions_ = 0;
};

struct ModelConfig {
  uint64_t capacity;
  uint32_t window_percent;
  uint32_t protected_percent;
  uint64_t sample_size;
  uint64_t max_charge;  // charges drawn from [1, max_charge]
};

std::string Describe(const ModelConfig& c, uint32_t seed) {
  return "capacity=" + std::to_string(c.capacity) + " window%=" + std::to_string(c.window_percent) +
         " protected%=" + std::to_string(c.protected_percent) + " sample=" + std::to_string(c.sample_size) +
         " max_charge=" + std::to_string(c.max_charge) + " seed=" + std::to_string(seed);
}

constexpr uint64_t kKeys = 24;

// Runs one random trace on both and compares after every step. Adds the
// number of contests the policy decided (admissions + rejections) to
// *contests. (void: ASSERT_* needs it.)
void RunAgainstReference(const ModelConfig& c, uint32_t seed, int steps, uint64_t* contests) {
  SCOPED_TRACE(Describe(c, seed));
  WTinyLfuPolicy policy(WTinyLfuPolicy::Options{
      .capacity_bytes = c.capacity,
      .window_percent = c.window_percent,
      .protected_percent = c.protected_percent,
      .sketch = CountMinSketch::Options{.width = 1 << 16, .sample_size = c.sample_size, .doorkeeper_bits = 1 << 20}});
  ReferenceModel ref(c.capacity, c.window_percent, c.protected_percent, c.sample_size);
  std::mt19937 rng(seed);
  std::vector<uint64_t> evicted;
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    // Skewed keys: 6 hot keys get about half of the traffic.
    const uint64_t key = rng() % 2 ? rng() % 6 : rng() % kKeys;
    const uint64_t charge = 1 + rng() % c.max_charge;
    const int op = rng() % 100;
    std::vector<uint64_t> ref_evicted;
    evicted.clear();
    if (op < 85) {  // a lookup: hit -> Touch, miss -> Insert
      policy.RecordAccess(key);
      ref.RecordAccess(key);
      EXPECT_EQ(policy.Contains(key), ref.Contains(key));
      if (ref.Contains(key)) {
        policy.Touch(key);
        ref.Touch(key);
      } else {
        policy.Insert(key, charge, &evicted);
        ref_evicted = ref.Insert(key, charge);
      }
    } else if (op < 92) {  // invalidation
      policy.Erase(key);
      ref.Erase(key);
    } else if (op < 98) {  // re-insert (a resident key's charge changes)
      policy.Insert(key, charge, &evicted);
      ref_evicted = ref.Insert(key, charge);
    } else {  // a value that can never fit
      policy.Insert(key, c.capacity + 1, &evicted);
      ref_evicted = ref.Insert(key, c.capacity + 1);
    }
    // Precondition of the comparison: exact estimates (no collisions).
    for (uint64_t k = 0; k < kKeys; ++k) {
      ASSERT_EQ(policy.Frequency(k), ref.Frequency(k)) << "sketch collision on key " << k;
    }
    ASSERT_EQ(evicted, ref_evicted) << "admission/eviction decisions differ";
    ASSERT_EQ(policy.Keys(Segment::kWindow), ref.Keys(Segment::kWindow));
    ASSERT_EQ(policy.Keys(Segment::kProbation), ref.Keys(Segment::kProbation));
    ASSERT_EQ(policy.Keys(Segment::kProtected), ref.Keys(Segment::kProtected));
    ASSERT_EQ(policy.used_bytes(), ref.Used());
    ASSERT_LE(policy.used_bytes(), c.capacity);
  }
  *contests += policy.admissions() + policy.rejections();
}

TEST(WTinyLfuTest, MatchesReferenceModelOnRandomTraces) {
  const ModelConfig configs[] = {
      {10, 1, 80, 30, 1},     // unit charges, window rounds to 0 bytes: one-entry window
      {12, 25, 80, 40, 1},    // unit charges, 3-entry window
      {40, 20, 80, 100, 5},   // variable charges
      {60, 10, 50, 25, 12},   // large charges relative to capacity, frequent halving
      {30, 0, 100, 1000, 3},  // everything protected, no halving inside the trace
  };
  uint64_t contests = 0;
  for (const ModelConfig& c : configs) {
    for (uint32_t seed = 1; seed <= 12; ++seed) {
      RunAgainstReference(c, seed, 1500, &contests);
      if (testing::Test::HasFatalFailure()) return;
    }
  }
  EXPECT_GT(contests, 1000u) << "the traces must exercise admission contests";
}

// The smallest case by hand: a one-entry window in front of 3 main slots.
TEST(WTinyLfuTest, TieRejectsCandidateHigherFrequencyWins) {
  // Wide sketch: exact frequencies for these 7 keys.
  WTinyLfuPolicy p(WTinyLfuPolicy::Options{
      .capacity_bytes = 4,
      .window_percent = 0,
      .protected_percent = 25,
      .sketch = CountMinSketch::Options{.width = 1 << 16, .sample_size = 1000, .doorkeeper_bits = 1 << 16}});
  std::vector<uint64_t> evicted;
  auto access_insert = [&](uint64_t k) {
    p.RecordAccess(k);
    p.Insert(k, 1, &evicted);
  };
  for (uint64_t k = 1; k <= 4; ++k) access_insert(k);  // not full yet: no contests
  EXPECT_TRUE(evicted.empty());
  EXPECT_EQ(p.Keys(Segment::kProbation), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(p.Keys(Segment::kWindow), (std::vector<uint64_t>{4}));

  access_insert(5);  // candidate 4 (freq 1) vs victim 1 (freq 1): tie, rejected
  EXPECT_EQ(evicted, (std::vector<uint64_t>{4}));
  EXPECT_EQ(p.rejections(), 1u);

  p.RecordAccess(6);
  p.RecordAccess(6);
  access_insert(6);  // candidate 5 (freq 1) vs victim 1 (freq 1): rejected
  EXPECT_EQ(evicted, (std::vector<uint64_t>{5}));
  access_insert(7);  // candidate 6 (freq 3) vs victim 1 (freq 1): admitted
  EXPECT_EQ(evicted, (std::vector<uint64_t>{1}));
  EXPECT_EQ(p.admissions(), 1u);
  EXPECT_EQ(p.Keys(Segment::kProbation), (std::vector<uint64_t>{2, 3, 6}));
  EXPECT_EQ(p.Keys(Segment::kWindow), (std::vector<uint64_t>{7}));

  // A hit in probation promotes; protected holds 25% of the 4-byte main
  // region, one entry, so a second promotion demotes the first back to
  // probation's MRU end.
  p.Touch(2);
  EXPECT_EQ(p.Keys(Segment::kProtected), (std::vector<uint64_t>{2}));
  p.Touch(3);
  EXPECT_EQ(p.Keys(Segment::kProtected), (std::vector<uint64_t>{3}));
  EXPECT_EQ(p.Keys(Segment::kProbation), (std::vector<uint64_t>{6, 2}));
}

TEST(WTinyLfuTest, OversizedChargeIsRejectedAndBoundHolds) {
  WTinyLfuPolicy p(1000, 10);
  std::vector<uint64_t> evicted;
  p.Insert(1, 400, &evicted);
  EXPECT_TRUE(evicted.empty());
  p.Insert(2, 1001, &evicted);
  EXPECT_EQ(evicted, (std::vector<uint64_t>{2}));
  EXPECT_FALSE(p.Contains(2));
  // A resident key growing past the capacity goes away too.
  p.Insert(1, 5000, &evicted);
  EXPECT_EQ(evicted, (std::vector<uint64_t>{1}));
  EXPECT_EQ(p.used_bytes(), 0u);
  // A single entry larger than the window (10 bytes) still enters through it,
  // and pushes main entries out if needed, without exceeding the capacity.
  for (uint64_t k = 10; k < 20; ++k) p.Insert(k, 90, &evicted);
  p.Insert(99, 900, &evicted);
  EXPECT_TRUE(p.Contains(99));
  EXPECT_LE(p.used_bytes(), 1000u);
  p.Erase(99);
  EXPECT_FALSE(p.Contains(99));
}

struct ScanResult {
  int hot_resident_before_scan = 0;
  int hot_resident_after_scan = 0;
  uint64_t hot_hits_during_scan = 0;
  uint64_t hot_accesses_during_scan = 0;
};

// One access as a cache does it: record, then hit or insert.
void Access(Policy& p, uint64_t key, std::vector<uint64_t>* evicted, bool* hit = nullptr) {
  p.RecordAccess(key);
  const bool h = p.Contains(key);
  if (h) {
    p.Touch(key);
  } else {
    p.Insert(key, 1, evicted);
  }
  if (hit != nullptr) *hit = h;
}

// Capacity 1000 unit entries. Warm-up: 20 rounds, each reading all 200 hot
// keys once plus 200 one-shot cold keys, shuffled. Then a one-shot scan of
// 100,000 never-seen keys (100x the cache, 10 sketch sample periods); every
// `hot_every`-th access of the scan is a hot key (0: a pure scan).
ScanResult RunScanScenario(Policy& p, int hot_every) {
  constexpr uint64_t kHot = 200;
  std::mt19937 rng(17);
  std::vector<uint64_t> evicted;
  uint64_t next_cold = 1'000'000;
  for (int round = 0; round < 20; ++round) {
    std::vector<uint64_t> batch;
    for (uint64_t k = 0; k < kHot; ++k) batch.push_back(k);
    for (int i = 0; i < 200; ++i) batch.push_back(next_cold++);
    std::shuffle(batch.begin(), batch.end(), rng);
    for (uint64_t k : batch) Access(p, k, &evicted);
  }
  ScanResult r;
  for (uint64_t k = 0; k < kHot; ++k) r.hot_resident_before_scan += p.Contains(k);
  uint64_t next_hot = 0;
  for (int i = 0; i < 100'000; ++i) {
    if (hot_every > 0 && i % hot_every == 0) {
      bool hit = false;
      Access(p, next_hot++ % kHot, &evicted, &hit);
      r.hot_hits_during_scan += hit;
      ++r.hot_accesses_during_scan;
    } else {
      Access(p, 10'000'000 + i, &evicted);
    }
    EXPECT_LE(p.used_bytes(), 1000u);
  }
  for (uint64_t k = 0; k < kHot; ++k) r.hot_resident_after_scan += p.Contains(k);
  return r;
}

TEST(WTinyLfuTest, PureScanDoesNotEvictHotSet) {
  WTinyLfuPolicy tinylfu(1000, 1000);
  const ScanResult t = RunScanScenario(tinylfu, 0);
  EXPECT_EQ(t.hot_resident_before_scan, 200);
  EXPECT_EQ(t.hot_resident_after_scan, 200);
  // The hot set sits in the protected region (790 of the 990 main slots),
  // which one-shot keys never reach: they lose every contest (tie or lower).
  for (uint64_t k = 0; k < 200; ++k) EXPECT_EQ(tinylfu.SegmentOf(k), Segment::kProtected) << k;

  LruPolicy lru(1000);
  const ScanResult l = RunScanScenario(lru, 0);
  EXPECT_EQ(l.hot_resident_before_scan, 200);
  EXPECT_EQ(l.hot_resident_after_scan, 0) << "LRU should lose the hot set to the scan";
}

TEST(WTinyLfuTest, HotKeysKeepHittingDuringScan) {
  // Each hot key comes back every 2000 accesses, twice the cache size, so
  // LRU always misses it; W-TinyLFU keeps serving it.
  WTinyLfuPolicy tinylfu(1000, 1000);
  const ScanResult t = RunScanScenario(tinylfu, 10);
  EXPECT_EQ(t.hot_hits_during_scan, t.hot_accesses_during_scan);
  EXPECT_EQ(t.hot_resident_after_scan, 200);

  LruPolicy lru(1000);
  const ScanResult l = RunScanScenario(lru, 10);
  EXPECT_LT(l.hot_hits_during_scan, l.hot_accesses_during_scan / 10);
}

TEST(LruPolicyTest, EvictsLeastRecentlyUsedByBytes) {
  LruPolicy p(10);
  std::vector<uint64_t> evicted;
  p.Insert(1, 4, &evicted);
  p.Insert(2, 4, &evicted);
  p.Touch(1);
  p.Insert(3, 4, &evicted);  // 12 > 10: the LRU key, 2, goes
  EXPECT_EQ(evicted, (std::vector<uint64_t>{2}));
  EXPECT_EQ(p.KeysLruToMru(), (std::vector<uint64_t>{1, 3}));
  p.Insert(4, 10, &evicted);  // needs everything
  EXPECT_EQ(evicted, (std::vector<uint64_t>{1, 3}));
  p.Insert(5, 11, &evicted);  // can never fit
  EXPECT_EQ(evicted, (std::vector<uint64_t>{5}));
  EXPECT_EQ(p.KeysLruToMru(), (std::vector<uint64_t>{4}));
  p.Insert(4, 2, &evicted);  // a charge update
  EXPECT_EQ(p.used_bytes(), 2u);
  p.Erase(4);
  EXPECT_EQ(p.used_bytes(), 0u);
  EXPECT_EQ(p.size(), 0u);
}

TEST(PolicyFactoryTest, KnownAndUnknownNames) {
  auto t = MakePolicy("tinylfu", 100, 10);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->name(), "tinylfu");
  EXPECT_EQ(t->capacity_bytes(), 100u);
  auto l = MakePolicy("lru", 100, 10);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->name(), "lru");
  EXPECT_EQ(MakePolicy("arc", 100, 10), nullptr);
  EXPECT_EQ(MakePolicy("", 100, 10), nullptr);
}

}  // namespace
}  // namespace rustfs::cache
