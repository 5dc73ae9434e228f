// What the client holds for one open inode: attributes, the chunk map
// (fetched whole at open, LLD-002 §1.1) and writes not yet published.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "common/read_mostly_mutex.h"
#include "common/status.h"
#include "layout/layout.h"
#include "layout/layout_rules.h"
#include "rustfs.pb.h"

namespace rustfs::client {

// Disjoint, non-touching [start, end) intervals.
class IntervalSet {
 public:
  void Add(uint64_t start, uint64_t end);
  bool Covers(uint64_t start, uint64_t end) const;
  bool Overlaps(uint64_t start, uint64_t end) const;
  bool empty() const { return m_.empty(); }
  uint64_t min() const { return m_.begin()->first; }
  uint64_t max() const { return m_.rbegin()->second; }
  const std::map<uint64_t, uint64_t>& intervals() const { return m_; }

 private:
  std::map<uint64_t, uint64_t> m_;  // start -> end
};

// Buffered writes to one chunk: `data` is the chunk's image (chunk_size
// bytes), valid where `ranges` says.
struct DirtyChunk {
  std::string data;
  IntervalSet ranges;
};

struct FileState {
  uint64_t ino = 0;
  // Readers share it; writers, flushes and truncates hold it exclusively.
  ReadMostlyMutex mu;
  pb::Attr attr;  // attr.size() includes buffered writes
  layout::EcGeometry geo;
  std::map<uint64_t, pb::ChunkEntry> chunks;  // by chunk index; absent = hole
  // Chunk indexes whose entries `chunks` holds (absent there = hole): all
  // of them once the whole map was fetched (random_read.prefetch_full_chunkmap),
  // else the ranges reads have fetched.
  IntervalSet mapped;
  std::map<uint64_t, DirtyChunk> dirty;       // by chunk index
  int opens = 0;                              // guarded by the client's table lock
  // Revoked while open (changed elsewhere, maybe unlinked: then only our
  // reference keeps it): dropped, reference and all, at the last close.
  // Guarded by the client's table lock.
  bool drop_at_close = false;
  // Set by a lease revocation (another client changed the file): the chunk
  // map and size must be fetched again before the next read. Atomic so the
  // revocation callback never waits for a reader or writer.
  std::atomic<bool> map_stale{false};
  // The AccessMode the last read of any handle was classified as (stats).
  std::atomic<int> last_mode{0};
  // Plan-fetched bytes go to the kernel's page cache (Client::HandOffPlanned)
  // only while nothing here may change the file: handles open for writing
  // and truncations in progress count as writers. A writer starts by taking
  // handoff_mu, so none starts while a hand-off is storing pages.
  std::mutex handoff_mu;
  int writers = 0;  // guarded by handoff_mu
  // Write errors (Linux's errseq): each failed publication of buffered
  // writes bumps err_seq and keeps its status; every handle reports it once
  // at its next fsync and close. Guarded by mu.
  uint64_t err_seq = 0;
  Status last_error;
};

// A writer of st begins (waiting for a hand-off storing pages) or ends.
void AddWriter(FileState& st);
void RemoveWriter(FileState& st);

// Whether st.chunks knows every chunk [offset, offset + len) touches.
bool MapCovers(const FileState& st, uint64_t offset, uint64_t len);


}  // namespace rustfs::client
