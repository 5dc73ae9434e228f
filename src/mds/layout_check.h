// What the MDS needs to know of a file's layout: how many servers a chunk
// takes, how many of them hold distinct data, and whether a layout a client
// asks for can be placed on this cluster.
#pragma once

#include <string>

#include "common/config.h"
#include "rustfs.pb.h"

namespace rustfs::mds {

// Shards per chunk, and how many of them hold distinct data.
inline uint32_t LayoutWidth(const pb::Layout& l) { return l.kind() == 1 ? l.replicas() : l.k() + l.m(); }
inline uint32_t DataShards(const pb::Layout& l) { return l.kind() == 1 ? 1 : l.k(); }

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

}  // namespace rustfs::mds
