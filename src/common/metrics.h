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

class Counter {
 public:
  void Add(uint64_t n) { v_.fetch_add(n, std::memory_order_relaxed); }
  void Inc() { Add(1); }
  uint64_t Get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// Returns the counter named `name`, creating it at zero. The reference stays
// valid until the process exits.
Counter& GetCounter(const std::string& name);

// A copy of every counter, sorted by name.
std::map<std::string, uint64_t> SnapshotCounters();

// {"name": value, ...} of SnapshotCounters(), for stats endpoints.
std::string CountersToJson(const std::map<std::string, uint64_t>& counters);

}  // namespace rustfs
