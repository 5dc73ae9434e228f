// Repair: rebuilds the shards a chunk version is missing, so that after
// repair any further M failures are survivable again (DESIGN.md §9).
//
// A chunk is queued (MdsStore's repair queue) when it was written degraded
// (a position stored nowhere, layout::kNoDss), when a reader reported one of
// its shards corrupt, or when a DSS holding one of its shards has been gone
// longer than repair.grace_ms. Repairing a chunk reads whole shards from
// healthy positions until K (one for replicas) answered, decodes the
// missing ones with ISA-L, writes each to a live DSS with room that the
// chunk does not use yet (a corrupt shard on a live server is rewritten in
// place), records the new placement in the MDS store (the same chunk
// version: readers with the old map keep reading degraded until their
// layout lease is revoked) and revokes the file's layout leases. A chunk
// rewritten meanwhile makes the rebuilt copies garbage, nothing else.
//
// Bytes read and written together stay under repair.max_bytes_per_s.
// A chunk that cannot be repaired now (too few healthy shards reachable,
// no server to put a shard on) stays queued and is tried on a later pass.
//
// Progress is published as MDS counters (gauges set by each pass):
// mds.repair_queued_chunks, mds.repair_bytes_left (missing shards x shard
// capacity), mds.repair_rate_bytes_per_s (read + written, last pass),
// mds.repair_limit_bytes_per_s, mds.dss_gone; totals mds.scrub_shards,
// mds.scrub_bad_shards, mds.repair_chunks and
// mds.repair_bytes_written. `rustfs repair status` prints them.
//
// Thread-safety: Pass() runs on one thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/metrics.h"
#include "common/status.h"
#include "mds/lease_table.h"
#include "mds/mds_store.h"
#include "net/rpc_channel.h"

namespace rustfs::mds {

class Repairer {
 public:
  struct Cluster {
    // Live DSS with room for new shards, sorted.
    std::function<std::vector<uint32_t>()> writable;
    // DSS silent for longer than repair.grace_ms.
    std::function<std::set<uint32_t>()> gone;
    // The channel to DSS `id` (nullptr when there is no such DSS).
    std::function<net::RpcChannel*(uint32_t id)> channel;
  };
  Repairer(MdsStore& store, LeaseTable& leases, Cluster cluster, const Config::Repair& cfg);

  // Works through the repair queue once; returns early when `stop` is set.
  void Pass(const std::atomic<bool>& stop);

  // Scrub: reads every shard of up to `max_chunks` chunks from disk (past
  // the hot tier; the DSS checks each 4 KiB block's CRC), continuing where
  // the last call stopped; a shard that is corrupt or absent is recorded bad
  // (and so queued for repair). Shares the byte budget with repair. Returns
  // true when the walk wrapped around (a full pass is done).
  bool Scrub(const std::atomic<bool>& stop, size_t max_chunks);


 private:
  // Repairs one chunk: Ok when nothing is missing any more (or the chunk
  // went away), an error naming what blocks it otherwise.
  rustfs::Status RepairChunk(uint64_t ino, uint64_t index, const std::set<uint32_t>& gone,
                             const std::atomic<bool>& stop);
  // Sleeps as long as `bytes` more would take at the configured rate.
  void Pace(uint64_t bytes, const std::atomic<bool>& stop);

  MdsStore& store_;
  LeaseTable& leases_;
  Cluster cluster_;
  const Config::Repair cfg_;
  // Pass()'s own state.
  int64_t budget_start_us_ = 0;
  uint64_t budget_bytes_ = 0;
  uint64_t moved_bytes_ = 0;        // read + written, since the start
  int64_t last_warned_us_ = 0;      // steady clock, of the last "still queued" warning
  std::set<uint32_t> queued_gone_;  // gone DSS whose chunks are queued already
  std::pair<uint64_t, uint64_t> scrub_after_{0, 0};  // the walk's position

  Counter& chunks_repaired_;
  Counter& bytes_repaired_;
  Counter& deferred_;
  Counter& queued_;
  Counter& bytes_left_;
  Counter& rate_;
  Counter& gone_;
  Counter& scrubbed_;
  Counter& scrub_bad_;
};

}  // namespace rustfs::mds
