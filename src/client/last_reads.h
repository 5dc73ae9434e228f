// The last N reads a detector remembers, oldest first: the one window both
// access detectors (AccessDetector's classification, StrideDetector's
// deltas) keep over a file's reads.
//
// A fixed array, not a deque: every read scans the window (the cache-hit
// path included), and a contiguous array of at most kMax entries is the
// cheapest thing to scan; pushing into a full window shifts it by one.
//
// Not thread-safe: each detector guards its own with its mutex.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

namespace rustfs::client {

template <class T, size_t kMax>
class LastReads {
 public:
  // capacity: how many are kept, 1..kMax (callers clamp their option).
  explicit LastReads(size_t capacity) : capacity_(std::clamp<size_t>(capacity, 1, kMax)) {}

  // Adds `v` as the newest; in a full window, the oldest goes.
  void Push(const T& v) {
    if (n_ == capacity_) {
      std::copy(items_.begin() + 1, items_.begin() + n_, items_.begin());
      n_--;
    }
    items_[n_++] = v;
  }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  // i = 0 is the oldest, size() - 1 the newest.
  T& operator[](size_t i) { return items_[i]; }
  const T& operator[](size_t i) const { return items_[i]; }
  const T& newest() const { return items_[n_ - 1]; }

 private:
  std::array<T, kMax> items_{};
  size_t capacity_;
  size_t n_ = 0;
};

}  // namespace rustfs::client
