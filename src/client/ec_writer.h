// Publishes buffered writes of one chunk as a new chunk version.
//
// Only the stripe rows the writes touch are rewritten: rows partly covered
// are first read back (through EcReader, so a down shard still works), the
// new bytes laid over them, parity recomputed for those rows, and each
// shard's rows sent to its DSS, which clones the rest of the shard from the
// base version locally. Only when every shard is durable does the client
// commit the version to the MDS; a crash before that leaves the file on its
// old version, intact.
//
// Degraded writes: positions the MDS left without a server (too few could
// take a shard) and shards whose server failed the write are published as
// layout::kNoDss, if the MDS finds enough were stored
// (layout.min_write_shards); repair rebuilds them later. A position moved
// to a new server gets its shard whole, read back through the old version. A concurrent writer that committed first makes the
// commit stale, and the flush starts over from the new base.
#pragma once

#include <atomic>

#include "client/dss_pool.h"
#include "client/ec_reader.h"
#include "client/file_state.h"
#include "client/mds_client.h"

namespace rustfs::client {

class EcWriter {
 public:
  // `client_id` is the lease session the commits are made under (so the
  // MDS revokes every holder but us).
  EcWriter(DssPool& dss, MdsClient& mds, EcReader& reader, const std::atomic<uint64_t>& client_id);

  // Caller holds st.mu exclusively. On success st.chunks[index] is the new
  // version and, if `grow_size`, the MDS size covers the written bytes.
  Status FlushChunk(FileState& st, uint64_t index, const DirtyChunk& d, bool grow_size = true);

 private:
  Status WriteOnce(FileState& st, uint64_t index, const DirtyChunk& d, bool grow_size);

  DssPool& dss_;
  MdsClient& mds_;
  EcReader& reader_;
  const std::atomic<uint64_t>& client_id_;
  Counter& bytes_written_;
  Counter& rmw_bytes_read_;
  Counter& degraded_writes_;  // versions published with a shard missing
};

}  // namespace rustfs::client
