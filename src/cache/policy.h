// Eviction/admission policy interface of the fragment cache (LLD-002 §3.1).
//
// A Policy tracks which keys are resident and how many bytes they are
// charged; it never owns values. The cache that owns the values calls it on
// every operation and drops whatever keys it reports evicted. Keeping the
// policy value-free lets the simulator (bench/cache_sim) and the unit tests
// drive exactly the code the real cache runs.
//
// Keys are uint64_t (the sharded cache passes a 64-bit hash of its key).
// Charges and capacities are in bytes; the policy guarantees
// used_bytes() <= capacity_bytes() after every call.
//
// Not thread-safe: each instance is guarded by its owner's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace rustfs::cache {

class Policy {
 public:
  virtual ~Policy() = default;

  // Called on every lookup, hit or miss, before Touch/Insert. Feeds the
  // frequency estimate (a no-op for LRU). Insert does not count as an
  // access: the lookup that missed already did.
  virtual void RecordAccess(uint64_t key) = 0;

  virtual bool Contains(uint64_t key) const = 0;

  // A hit on a resident key: refreshes its recency / promotes it. No-op if
  // the key is not resident.
  virtual void Touch(uint64_t key) = 0;

  // Makes `key` resident with `charge` bytes, or updates the charge of a
  // resident key (and touches it). `evicted` is cleared, then receives every
  // key this call removed, which may be `key` itself when the policy rejects
  // it (then Contains(key) is false afterwards). A charge above
  // capacity_bytes() is always rejected.
  virtual void Insert(uint64_t key, uint64_t charge, std::vector<uint64_t>* evicted) = 0;

  // Removes `key` if resident (invalidation). Frequency history is kept.
  virtual void Erase(uint64_t key) = 0;

  virtual uint64_t used_bytes() const = 0;
  virtual uint64_t capacity_bytes() const = 0;
  virtual size_t size() const = 0;  // resident keys
  virtual std::string_view name() const = 0;
};

// Creates the policy named `name`: "tinylfu" (W-TinyLFU, the default of the
// fragment cache) or "lru". `expected_entries` is roughly how many entries
// fit in `capacity_bytes`; it sizes the frequency sketch. Returns nullptr for
// an unknown name; the caller turns that into a config error naming the value.
std::unique_ptr<Policy> MakePolicy(std::string_view name, uint64_t capacity_bytes,
                                   uint64_t expected_entries);

}  // namespace rustfs::cache
