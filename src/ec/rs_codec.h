// Systematic Reed-Solomon K+M over ISA-L, Cauchy generator matrix (every
// K x K submatrix is invertible, unlike Vandermonde). Shards 0..K-1 are the
// data itself; K..K+M-1 are parity. The codec works on any byte length, so
// callers encode or reconstruct just the stripe rows they touch.
//
// Thread-safe: Encode is const; Reconstruct caches decode tables per erasure
// pattern behind a mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/status.h"

namespace rustfs::ec {

class RsCodec {
 public:
  // k >= 1, m >= 0, k + m <= 32.
  static Result<std::shared_ptr<RsCodec>> Create(uint32_t k, uint32_t m);
  // The process's codec for k+m, made on first use and kept (its decode
  // tables are worth keeping across reads and repairs). Thread-safe.
  static Result<std::shared_ptr<RsCodec>> Shared(uint32_t k, uint32_t m);

  uint32_t k() const { return k_; }
  uint32_t m() const { return m_; }

  // data: k buffers of `len` bytes (read). parity: m buffers of `len` bytes
  // (written). Buffers are caller-owned.
  void Encode(std::span<const uint8_t* const> data, std::span<uint8_t* const> parity,
              size_t len) const;

  // shards: k+m entries, each `len` bytes or nullptr when that shard is
  // unavailable. Recomputes the shards listed in `want` (any indexes, data or
  // parity, that are nullptr in `shards`) into `out` (same order as want).
  // Needs at least k non-null shards; uses the first k available.
  Status Reconstruct(std::span<const uint8_t* const> shards, std::span<const uint32_t> want,
                     std::span<uint8_t* const> out, size_t len) const;

 private:
  RsCodec(uint32_t k, uint32_t m);

  uint32_t k_, m_;
  std::vector<uint8_t> encode_matrix_;  // (k+m) x k
  std::vector<uint8_t> encode_tables_;  // ISA-L expanded tables for the parity rows

  // Decode tables keyed by (bitmask of sources used, bitmask of wanted).
  mutable std::mutex mu_;
  mutable std::map<std::pair<uint64_t, uint64_t>, std::vector<uint8_t>> decode_cache_;
};

}  // namespace rustfs::ec
