// Reads byte ranges of erasure-coded chunks (LLD-002 §2.1).
//
// Fast path: one BatchRead per DSS for all the ranges wanted from it; only
// the data shards that hold the wanted bytes are read, only
// those byte ranges, all in parallel; no parity, no decode. When a needed
// shard's DSS is down, its shard is missing, or a block fails its checksum,
// the same stripe rows are read from K healthy shards and just those rows
// are decoded. A corrupt shard is reported to the MDS. Wrong bytes are never
// returned: if fewer than K shards of a row can be read, the read fails.
#pragma once

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
  EcReader(DssPool& dss, MdsClient& mds, uint64_t gap_threshold);

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

  DssPool& dss_;
  MdsClient& mds_;
  const uint64_t gap_threshold_;
  Counter& batch_rpcs_;
  Counter& segments_;
  Counter& coalesced_;
  std::mutex mu_;
  std::map<std::pair<uint32_t, uint32_t>, std::shared_ptr<ec::RsCodec>> codecs_;
  Counter& reconstructions_;
  Counter& degraded_bytes_;
  Counter& corrupt_reported_;
  Counter& shard_bytes_;
};

pb::ShardKey MakeShardKey(uint64_t ino, const pb::ChunkEntry& c, uint32_t shard);

}  // namespace rustfs::client
