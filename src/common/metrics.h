// Process-wide named counters. Every byte the system moves is counted here
// (bytes requested, read from disk, sent on the wire, cache hits, RPCs), and
// amplification and hit rates are computed from these counters, never guessed.
//
// Counter objects live for the life of the process; hot paths keep a
// reference obtained once (GetCounter is a locked map lookup).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

namespace rustfs {

// Striped: each thread adds to one of kStripes cache lines (chosen once per
// thread), so threads counting the same event on different cores do not
// bounce one line between them. On the cached-read path several counters
// move per read; one shared line each would cost more than the read.
class Counter {
 public:
  static constexpr unsigned kStripes = 8;
  void Add(uint64_t n) { stripes_[StripeOfThisThread()].v.fetch_add(n, std::memory_order_relaxed); }
  void Inc() { Add(1); }
  // For a gauge with one writer (a queue length, a rate): the value becomes
  // v. Not to be mixed with Add from other threads.
  void Set(uint64_t v) {
    for (unsigned i = 1; i < kStripes; i++) stripes_[i].v.store(0, std::memory_order_relaxed);
    stripes_[0].v.store(v, std::memory_order_relaxed);
  }
  // The sum over stripes: exact once writers are quiet, else a value the
  // counter held at some instant during the call or a little after.
  uint64_t Get() const {
    uint64_t sum = 0;
    for (const auto& s : stripes_) sum += s.v.load(std::memory_order_relaxed);
    return sum;
  }

 private:
  static unsigned StripeOfThisThread() {
    thread_local const unsigned stripe = NextStripe();
    return stripe;
  }
  static unsigned NextStripe();  // round robin over threads
  struct alignas(64) Stripe {
    std::atomic<uint64_t> v{0};
  };
  Stripe stripes_[kStripes];
};

// Returns the counter named `name`, creating it at zero. The reference stays
// valid until the process exits.
Counter& GetCounter(const std::string& name);

// A copy of every counter, sorted by name.
std::map<std::string, uint64_t> SnapshotCounters();

// {"name": value, ...} of SnapshotCounters(), for stats endpoints.
std::string CountersToJson(const std::map<std::string, uint64_t>& counters);

}  // namespace rustfs
