// Reads byte ranges of erasure-coded or replicated chunks (LLD-002 §2.1).
//
// Fast path (ec_reader.cc): one BatchRead per DSS for all the ranges wanted
// from it; only the data shards that hold the wanted bytes are read, only
// those byte ranges, all in parallel; no parity, no decode.
//
// Repair (ec_reader_repair.cc): when a needed shard's DSS is down, its
// shard is missing, or a block fails its checksum, the same byte range (in
// 4 KiB blocks) is read from K healthy shards and just that range is
// decoded; all the pieces one read has to repair go out together, one
// BatchRead per DSS. A corrupt shard is reported to the MDS. Wrong bytes
// are never returned: if fewer than K shards of a row can be read, the read
// fails.
//
// Replicated chunks (EcGeometry::replicated): each piece goes to one replica
// picked by power-of-two choices over this client's requests in flight per
// DSS; a failed replica is replaced by the next one.
//
// Hedging (client.hedge_reads): a BatchRead that has not answered within
// the hedge delay (replicas: the recent p95 of BatchRead latencies, at
// least client.hedge_min_us; EC, whose alternative costs K reads: 3 x the
// p99, at least 5 x hedge_min_us) is abandoned and its pieces served another
// way, so one stalled server does not set the tail. Hedging never amplifies
// load: it takes a budget (5 % of the pieces read, and a small burst), it
// waits when the slowness is the whole machine's (another server was late
// too just now, or the read's other servers have not answered either), and
// a server hedged twice in a row is routed around for a growing while
// instead of being hedged read after read. A reply missing past the stall
// delay (10 hedge delays, at least 500 ms; 4 times that while the whole
// machine is slow) is failed over whatever the budget: that is a failed
// server, not a slow one. Counters:
// client.hedged_reads (pieces served another way because their server was
// slow), client.hedged_batches, client.stall_failovers,
// client.hedges_declined.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "client/dss_pool.h"
#include "client/mds_client.h"
#include "ec/rs_codec.h"
#include "layout/layout.h"
#include "layout/layout_rules.h"
#include "rustfs.pb.h"

namespace rustfs::client {

// One range of one chunk of file `ino` laid out by `geo`, and where its
// bytes go. Caller-owned memory (chunk, geo, dst outlive the read).
struct ReadExtent {
  uint64_t ino;
  const layout::EcGeometry* geo;
  const pb::ChunkEntry* chunk;
  uint64_t chunk_offset;
  uint64_t length;
  char* dst;
};

class EcReader {
 public:
  // Ranges of one shard closer than `gap_threshold` bytes are read as one
  // (random_io.coalesce_gap_threshold).
  struct Options {
    uint64_t gap_threshold = 16 * 1024;  // bytes
    bool hedge = true;
    uint32_t hedge_min_us = 2000;
    // ec.partial_read_fast_path: off, every EC read takes the repair path
    // (the wanted range of K shards, decoded) as a reader without LLD-002
    // §2.1's partial reads would; for comparison and for testing the
    // decoder under load.
    bool partial_read_fast_path = true;
  };
  EcReader(DssPool& dss, MdsClient& mds, const Options& options);

  // Reads every extent; those of several files (a FUSE batch of reads of
  // many files) go together: one BatchRead per DSS for all of them.
  // kStale when every shard of a chunk version the extents name is gone
  // (the caller's map is older than the chunk: fetch it again).
  Status Read(std::span<const ReadExtent> extents);

 private:
  struct Job {  // one shard range serving pieces of one extent
    const ReadExtent* extent;
    layout::ShardRead read;
  };
  struct Failed {  // a job the fast path could not serve, and why
    const Job* job;
    Status why;
    // Its server is alive but was routed around or hedged away: its shard
    // is a last resort for the repair, not excluded from it.
    bool slow = false;
  };

  // --- repair (ec_reader_repair.cc) ---
  // Serves the failed jobs (of any files) another way, each by its own
  // file's geometry.
  Status Repair(const std::vector<Failed>& failed);
  // EC: rebuilds every job from K other shards, all fetched together
  // (whatever files they belong to); jobs whose batched sources fail go on
  // to Degraded one by one.
  Status RepairEcBatch(const std::vector<Failed>& failed);
  // Serves a job whose shard read failed with `first_failure`.
  Status Degraded(uint64_t ino, const layout::EcGeometry& g, const Job& job,
                  std::vector<bool>& bad, const Status& first_failure, bool own_shard_slow);
  Status FromReplica(uint64_t ino, const layout::EcGeometry& g, const Job& job, std::vector<bool>& bad,
                     const Status& first_failure);
  void ReportBad(uint64_t ino, const pb::ChunkEntry& c, uint32_t shard, const Status& why);
  // Reads [off, off+len) of shards of c (RepairOrder, skipping bad ones)
  // until `need` answered in full, calling on_shard(shard, bytes) for each;
  // a shard slower than the hedge delay keeps running while the next is
  // started, and is waited for only when nothing else is left. Shards that
  // fail get bad[s] = true.
  struct Gathered {
    uint32_t got = 0;
    bool all_not_found = true;  // every shard that failed had no such version
    std::string failures;       // "shard S (DSS D): why;" for each that failed
  };
  Gathered ReadFirst(uint64_t ino, const pb::ChunkEntry& c, bool replicated, uint32_t need,
                     uint64_t off, uint64_t len, std::vector<bool>& bad,
                     const std::function<void(uint32_t, std::string&&)>& on_shard);
  static Status VersionGone(uint64_t ino, const pb::ChunkEntry& c);
  // Decodes shard `want`'s [0, len) from the K buffers in srcs (nullptr:
  // not available) into out.
  Status Rebuild(const layout::EcGeometry& g, const std::vector<const uint8_t*>& srcs,
                 uint32_t want, uint64_t len, uint8_t* out);

  // --- replica choice and hedging (ec_reader.cc) ---
  uint32_t PickReplica(const pb::ChunkEntry& c, uint32_t replicas);
  // Microseconds to wait for a BatchRead before hedging, and the record of
  // one that answered.
  int64_t HedgeDelayUs(bool replicated);
  // Microseconds after which an unanswered BatchRead is failed over
  // whatever the hedging budget says.
  int64_t StallDelayUs(bool replicated);
  void RecordLatency(int64_t us);
  // Another server than `dss` was late just now: the whole machine is slow.
  bool MachineBusy(uint32_t dss, int64_t now_us);
  // Takes a hedge of `pieces` from the budget, if it has that much.
  bool TakeHedgeBudget(size_t pieces);
  void NoteLate(uint32_t dss, int64_t now_us);

  DssPool& dss_;
  MdsClient& mds_;
  const Options opt_;
  std::mutex lat_mu_;
  std::vector<int64_t> lat_us_;  // ring of recent BatchRead latencies
  size_t lat_next_ = 0;
  std::atomic<int64_t> p95_us_{0};  // 0 until enough samples
  std::atomic<int64_t> p99_us_{0};
  // Hedge budget in thousandths of a piece: each piece read earns 50 (5 %).
  std::atomic<int64_t> hedge_credit_{0};
  // Per DSS: when a batch to it last ran past its hedge delay (µs, steady).
  std::unique_ptr<std::atomic<int64_t>[]> late_at_us_;
  Counter& batch_rpcs_;
  Counter& segments_;
  Counter& coalesced_;
  Counter& reconstructions_;
  Counter& degraded_bytes_;
  Counter& degraded_batches_;
  Counter& corrupt_reported_;
  Counter& shard_bytes_;
  Counter& hedged_;
  Counter& hedged_batches_;
  Counter& stall_failovers_;
  Counter& hedges_declined_;
};

using layout::MakeShardKey;

}  // namespace rustfs::client
