// The rules of a file's layout (pb::Layout), in one place for the MDS, the
// client and the tools: its geometry, how many servers a chunk takes and
// how many of them hold distinct data, how few a write may store, whether a
// layout can be placed on a cluster, and its "ec:K+M" / "replica:R" text.
// (Config validation checks the same rules on the config's own fields, in
// common/config.cc, which cannot depend on the wire types.)
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "common/config.h"
#include "common/status.h"
#include "layout/layout.h"
#include "rustfs.pb.h"

namespace rustfs::layout {

// The byte math's view of a layout (layout.h).
EcGeometry GeometryOf(const pb::Layout& l);

// "ec:K+M" or "replica:R", and back: ParseLayoutSpec fills kind, k, m and
// replicas of `l`, leaving its sizes; InvalidArgument naming the text.
std::string LayoutSpec(const pb::Layout& l);
Status ParseLayoutSpec(std::string_view spec, pb::Layout& l);

// The DSS key of shard `shard` of chunk version `c` of `ino`.
pb::ShardKey MakeShardKey(uint64_t ino, const pb::ChunkEntry& c, uint32_t shard);

// Shards per chunk, and how many of them hold distinct data.
inline uint32_t LayoutWidth(const pb::Layout& l) { return l.kind() == 1 ? l.replicas() : l.k() + l.m(); }
inline uint32_t DataShards(const pb::Layout& l) { return l.kind() == 1 ? 1 : l.k(); }

// Fewest shards a new chunk version may be published with
// (layout.min_write_shards, `configured`; 0 = K+1 for EC, as Ceph's
// min_size, and 2 copies for replicas), never fewer than the shards that
// hold distinct data nor more than the width.
inline uint32_t MinWriteShards(const pb::Layout& l, uint32_t configured) {
  const uint32_t want = configured ? configured : DataShards(l) + 1;
  return std::max(DataShards(l), std::min(want, LayoutWidth(l)));
}

// Positions of a chunk version stored nowhere (layout::kNoDss).
inline bool IsDegraded(const pb::ChunkEntry& c) {
  for (uint32_t d : c.dss())
    if (d == layout::kNoDss) return true;
  return false;
}

// A layout a client asks for (SET_LAYOUT) must be one this cluster can place.
inline Status CheckLayout(const pb::Layout& l, size_t num_dss) {
  const std::string what = "layout " + std::string(l.kind() == 1 ? "replica:" + std::to_string(l.replicas())
                                                                  : "ec:" + std::to_string(l.k()) + "+" + std::to_string(l.m()));
  if (l.kind() > 1) return InvalidArgument("layout kind " + std::to_string(l.kind()) + " is unknown");
  if (l.kind() == 1 && l.replicas() < 1) return InvalidArgument(what + ": needs at least 1 replica");
  if (l.kind() == 0 && l.k() < 1) return InvalidArgument(what + ": needs k >= 1");
  if (LayoutWidth(l) > num_dss)
    return InvalidArgument(what + " needs " + std::to_string(LayoutWidth(l)) + " data servers, the cluster has " +
                           std::to_string(num_dss));
  const uint64_t row = l.stripe_unit() * DataShards(l);
  if (l.stripe_unit() == 0 || l.stripe_unit() % Config::kChecksumBlock || l.chunk_size() == 0 ||
      l.chunk_size() % row)
    return InvalidArgument(what + ": chunk size " + std::to_string(l.chunk_size()) +
                           " must be a multiple of the row (" + std::to_string(row) + " bytes)");
  return Status::Ok();
}

}  // namespace rustfs::layout
