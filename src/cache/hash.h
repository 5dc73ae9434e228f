// 64-bit mixing shared by the cache policies and the sharded cache.
//
// Callers hand the cache keys that are often small dense integers (grain
// numbers, row ids) or come from std::hash, which is the identity for
// integers on libstdc++. Shard selection and the frequency sketch need bits
// that look random, so every key goes through Mix64 first.
#pragma once

#include <cstdint>

namespace rustfs::cache {

// The MurmurHash3 fmix64 finalizer: a bijection on uint64_t, so distinct
// keys stay distinct, with full avalanche.
inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// Smallest power of two >= x (1 for x == 0). x must be <= 2^63.
inline uint64_t CeilPow2(uint64_t x) {
  uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

}  // namespace rustfs::cache
