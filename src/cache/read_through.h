// The read-through-cache loop, once for every reader of a FragmentCache:
// the client's reads (Client::ReadMany), its prefetches, and the DSS's
// reads through its hot tier (one shard read, or a BatchRead's segments).
//
// For a batch of reads: the cached pages are copied into each read's
// buffer; every range the cache lacks (whole pages, adjacent ones merged)
// becomes a piece, and all pieces go to one fetch call, so a batch's misses
// reach the disks (or each DSS) together. A piece that lies inside its
// read's range is fetched straight into the read's buffer; one that reaches
// past it (the cache keeps whole pages) is fetched into a staging buffer and
// its share copied out. Fetched pieces are cached in their read's tier,
// unless keep() says no at that moment (a revocation came in meanwhile: the
// bytes may predate it). A failed piece fails only its read.
//
// Without a cache (nullptr) each read is one piece, fetched straight into
// its buffer: the same loop, so callers need no second path.
//
// Ownership: the caller owns the reads and their buffers; pieces live for
// the call. Thread-safety: that of the cache (thread-safe); the callbacks
// run on the calling thread. A batch whose reads are all cached allocates
// nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "cache/fragment_cache.h"
#include "common/status.h"
#include "common/uninit.h"

namespace rustfs::cache {

// One read of a batch.
struct ThroughRead {
  ObjectId id;              // the cache's key for the object read
  uint64_t offset = 0;      // bytes into the object
  uint64_t length = 0;      // bytes
  char* dst = nullptr;      // `length` bytes, caller-owned; filled when status is OK
  FragmentCache::Tier tier = FragmentCache::Tier::kFrequency;  // where its misses are cached
  Status status{};          // out: OK, or the status of a failed piece it needed
};

// A range of one read's object that the cache lacks, for fetch to fill.
struct ThroughPiece {
  size_t read = 0;       // index of its read in the batch
  uint64_t offset = 0;   // bytes into the object; page-aligned when there is a cache
  uint64_t length = 0;   // bytes; whole pages when there is a cache (zeros past the end)
  char* buf = nullptr;   // where fetch writes all `length` bytes (not initialised)
  Status status{};       // set by fetch: OK once buf holds the bytes
  bool staged = false;   // buf is a staging buffer (the piece reaches past its read), not the read's own
};

// Serves `reads` as described above; fetch(std::span<ThroughPiece>) fills
// every piece's buf and sets its status; keep() -> bool. Returns OK, or
// the status of the first failed piece (every read that needed a failed
// piece carries its status).
template <class Fetch, class Keep>
Status ReadThrough(FragmentCache* cache, std::span<ThroughRead> reads, Fetch&& fetch, Keep&& keep) {
  std::vector<ThroughPiece> pieces;
  for (size_t i = 0; i < reads.size(); i++) {
    ThroughRead& r = reads[i];
    r.status = Status::Ok();
    if (r.length == 0) continue;
    if (cache == nullptr) {
      pieces.push_back({i, r.offset, r.length, r.dst, {}});
      continue;
    }
    for (const FragmentCache::Range& m : cache->Read(r.id, r.offset, r.length, r.dst, r.tier)) {
      const bool inside = m.offset >= r.offset && m.offset + m.length <= r.offset + r.length;
      pieces.push_back({i, m.offset, m.length, inside ? r.dst + (m.offset - r.offset) : nullptr, {}, !inside});
    }
  }
  if (pieces.empty()) return Status::Ok();
  // Staging buffers, pointed to once the piece list is complete.
  std::vector<std::string> staging;
  for (const ThroughPiece& p : pieces)
    if (p.staged) ResizeUninitialized(staging.emplace_back(), p.length);
  for (size_t j = 0, k = 0; j < pieces.size(); j++)
    if (pieces[j].staged) pieces[j].buf = staging[k++].data();
  fetch(std::span<ThroughPiece>(pieces));
  const bool cache_them = cache != nullptr && keep();
  Status first_failure = Status::Ok();
  for (const ThroughPiece& p : pieces) {
    ThroughRead& r = reads[p.read];
    if (!p.status.ok()) {
      if (r.status.ok()) r.status = p.status;
      if (first_failure.ok()) first_failure = p.status;
      continue;
    }
    if (cache_them) cache->Insert(r.id, p.offset, std::string_view(p.buf, p.length), r.tier);
    if (!p.staged) continue;  // fetched in place
    const uint64_t s = std::max(p.offset, r.offset), e = std::min(p.offset + p.length, r.offset + r.length);
    if (s < e) std::memcpy(r.dst + (s - r.offset), p.buf + (s - p.offset), e - s);
  }
  return first_failure;
}

}  // namespace rustfs::cache
