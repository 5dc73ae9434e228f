// Reads byte ranges of erasure-coded or replicated chunks (LLD-002 §2.1).
//
// Fast path: one BatchRead per DSS for all the ranges wanted from it; only
// the data shards that hold the wanted bytes are read, only
// those byte ranges, all in parallel; no parity, no decode. When a needed
// shard's DSS is down, its shard is missing, or a block fails its checksum,
// the same byte range (in 4 KiB blocks) is read from K healthy shards and
// just that range is decoded. A corrupt shard is reported to the MDS. Wrong bytes are never
// returned: if fewer than K shards of a row can be read, the read fails.
//
// Replicated chunks (EcGeometry::replicated): each piece goes to one replica
// picked by power-of-two choices over this client's requests in flight per
// DSS; a failed replica is replaced by the next one.
//
// Hedging (client.hedge_reads): a BatchRead that has not answered within the
// recent p95 of BatchRead latencies (p99 for EC, whose alternative costs K
// reads; at least client.hedge_min_us) is abandoned and its pieces served
// another way (another replica, which also sends that DSS out of the
// replica choice for a short while, or a degraded read for EC), so one
// stalled server does not set the p99. Counter "client.hedged_reads".
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "client/dss_pool.h"
#include "client/mds_client.h"
#include "ec/rs_codec.h"
#include "layout/layout.h"
#include "rustfs.pb.h"

namespace rustfs::client {

// One range of one chunk, and where its bytes go. Caller-owned memory.
struct ReadExtent {
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
  };
  EcReader(DssPool& dss, MdsClient& mds, const Options& options);

  Status Read(uint64_t ino, const layout::EcGeometry& g, std::span<const ReadExtent> extents);

  Result<std::shared_ptr<ec::RsCodec>> Codec(uint32_t k, uint32_t m);

 private:
  struct Job {  // one shard range serving pieces of one extent
    const ReadExtent* extent;
    layout::ShardRead read;
  };
  Status Degraded(uint64_t ino, const layout::EcGeometry& g, const Job& job,
                  std::vector<bool>& bad);
  void ReportBad(uint64_t ino, const pb::ChunkEntry& c, uint32_t shard, const Status& why);
  // Reads [off, off+len) of shards of c (RepairOrder, skipping bad ones)
  // until `need` answered in full, calling on_shard(shard, bytes) for each;
  // a shard slower than the hedge delay keeps running while the next is
  // started, and is waited for only when nothing else is left. Shards that
  // fail get bad[s] = true. Returns how many answered.
  uint32_t ReadFirst(uint64_t ino, const pb::ChunkEntry& c, bool replicated, uint32_t need,
                     uint64_t off, uint64_t len,
                     std::vector<bool>& bad, const std::function<void(uint32_t, std::string&&)>& on_shard);
  Status FromReplica(uint64_t ino, const layout::EcGeometry& g, const Job& job, std::vector<bool>& bad);
  uint32_t PickReplica(const pb::ChunkEntry& c, uint32_t replicas);
  // Microseconds to wait for a BatchRead before hedging, and the record of
  // one that answered.
  int64_t HedgeDelayUs(bool replicated);
  void RecordLatency(int64_t us);

  DssPool& dss_;
  MdsClient& mds_;
  const Options opt_;
  std::mutex lat_mu_;
  std::vector<int64_t> lat_us_;  // ring of recent BatchRead latencies
  size_t lat_next_ = 0;
  std::atomic<int64_t> p95_us_{0};  // 0 until enough samples
  std::atomic<int64_t> p99_us_{0};
  Counter& batch_rpcs_;
  Counter& segments_;
  Counter& coalesced_;
  std::mutex mu_;
  std::map<std::pair<uint32_t, uint32_t>, std::shared_ptr<ec::RsCodec>> codecs_;
  Counter& reconstructions_;
  Counter& degraded_bytes_;
  Counter& corrupt_reported_;
  Counter& shard_bytes_;
  Counter& hedged_;
};

pb::ShardKey MakeShardKey(uint64_t ino, const pb::ChunkEntry& c, uint32_t shard);

}  // namespace rustfs::client
