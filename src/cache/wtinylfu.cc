#include "cache/wtinylfu.h"

#include <algorithm>

#include "cache/hash.h"

namespace rustfs::cache {

namespace {

// capacity * percent / 100 without overflowing for capacities near 2^64.
uint64_t PercentOf(uint64_t capacity, uint32_t percent) {
  percent = std::min<uint32_t>(percent, 100);
  return capacity / 100 * percent + capacity % 100 * percent / 100;
}

CountMinSketch::Options SketchOptions(const WTinyLfuPolicy::Options& o) {
  if (o.sketch) return *o.sketch;
  return CountMinSketch::OptionsForItems(o.expected_entries ? o.expected_entries : o.capacity_bytes);
}

}  // namespace

WTinyLfuPolicy::WTinyLfuPolicy(uint64_t capacity_bytes, uint64_t expected_entries)
    : WTinyLfuPolicy(Options{.capacity_bytes = capacity_bytes, .expected_entries = expected_entries}) {}

WTinyLfuPolicy::WTinyLfuPolicy(const Options& options)
    : capacity_(options.capacity_bytes),
      window_cap_(PercentOf(options.capacity_bytes, options.window_percent)),
      protected_cap_(PercentOf(options.capacity_bytes - window_cap_, options.protected_percent)),
      sketch_(SketchOptions(options)) {}

WTinyLfuPolicy::List& WTinyLfuPolicy::ListOf(Segment s) {
  switch (s) {
    case Segment::kWindow: return window_;
    case Segment::kProbation: return probation_;
    default: return protected_;
  }
}

uint64_t& WTinyLfuPolicy::BytesOf(Segment s) {
  switch (s) {
    case Segment::kWindow: return window_bytes_;
    case Segment::kProbation: return probation_bytes_;
    default: return protected_bytes_;
  }
}

void WTinyLfuPolicy::MoveTo(List::iterator it, Segment to) {
  BytesOf(it->segment) -= it->charge;
  BytesOf(to) += it->charge;
  ListOf(to).splice(ListOf(to).end(), ListOf(it->segment), it);
  it->segment = to;
}

void WTinyLfuPolicy::Remove(List::iterator it) {
  BytesOf(it->segment) -= it->charge;
  index_.erase(it->key);
  ListOf(it->segment).erase(it);
}

void WTinyLfuPolicy::RecordAccess(uint64_t key) { sketch_.Increment(Mix64(key)); }

uint32_t WTinyLfuPolicy::Frequency(uint64_t key) const { return sketch_.Estimate(Mix64(key)); }

void WTinyLfuPolicy::DemoteProtectedOverflow() {
  while (protected_bytes_ > protected_cap_ && !protected_.empty()) {
    MoveTo(protected_.begin(), Segment::kProbation);
  }
}

void WTinyLfuPolicy::Touch(uint64_t key) {
  auto found = index_.find(key);
  if (found == index_.end()) return;
  List::iterator it = found->second;
  switch (it->segment) {
    case Segment::kWindow:
      window_.splice(window_.end(), window_, it);
      break;
    case Segment::kProbation:
      MoveTo(it, Segment::kProtected);
      DemoteProtectedOverflow();
      break;
    case Segment::kProtected:
      protected_.splice(protected_.end(), protected_, it);
      break;
    case Segment::kNone:
      break;
  }
}

void WTinyLfuPolicy::AdmitWindowCandidate(std::vector<uint64_t>* evicted) {
  List::iterator candidate = window_.begin();
  MoveTo(candidate, Segment::kProbation);
  const uint64_t candidate_key = candidate->key;
  const uint32_t candidate_freq = Frequency(candidate_key);
  while (used_bytes() > capacity_) {
    List::iterator victim;
    if (probation_.begin() != candidate) {
      victim = probation_.begin();
    } else if (!protected_.empty()) {
      victim = protected_.begin();
    } else {
      // Nothing in the main region to compete with: the window's remaining
      // entries alone leave no room for the candidate.
      evicted->push_back(candidate_key);
      Remove(candidate);
      return;
    }
    if (candidate_freq > Frequency(victim->key)) {
      ++admissions_;
      evicted->push_back(victim->key);
      Remove(victim);
    } else {
      ++rejections_;
      evicted->push_back(candidate_key);
      Remove(candidate);
      return;
    }
  }
}

void WTinyLfuPolicy::Rebalance(std::vector<uint64_t>* evicted) {
  DemoteProtectedOverflow();
  while (window_bytes_ > window_cap_ && window_.size() > 1) AdmitWindowCandidate(evicted);
  while (used_bytes() > capacity_) {
    List& from = !probation_.empty() ? probation_ : !protected_.empty() ? protected_ : window_;
    evicted->push_back(from.front().key);
    Remove(from.begin());
  }
}

void WTinyLfuPolicy::Insert(uint64_t key, uint64_t charge, std::vector<uint64_t>* evicted) {
  evicted->clear();
  auto found = index_.find(key);
  if (charge > capacity_) {
    if (found != index_.end()) Remove(found->second);
    evicted->push_back(key);
    return;
  }
  if (found != index_.end()) {
    List::iterator it = found->second;
    BytesOf(it->segment) = BytesOf(it->segment) - it->charge + charge;
    it->charge = charge;
    Touch(key);
  } else {
    window_.push_back(Node{key, charge, Segment::kWindow});
    index_.emplace(key, std::prev(window_.end()));
    window_bytes_ += charge;
  }
  Rebalance(evicted);
}

void WTinyLfuPolicy::Erase(uint64_t key) {
  auto found = index_.find(key);
  if (found != index_.end()) Remove(found->second);
}

WTinyLfuPolicy::Segment WTinyLfuPolicy::SegmentOf(uint64_t key) const {
  auto found = index_.find(key);
  return found == index_.end() ? Segment::kNone : found->second->segment;
}

std::vector<uint64_t> WTinyLfuPolicy::Keys(Segment segment) const {
  const List* list = segment == Segment::kWindow      ? &window_
                     : segment == Segment::kProbation ? &probation_
                     : segment == Segment::kProtected ? &protected_
                                                      : nullptr;
  std::vector<uint64_t> out;
  if (list == nullptr) return out;
  for (const Node& n : *list) out.push_back(n.key);
  return out;
}

}  // namespace rustfs::cache
