// libFuzzer: request bodies as a peer may send them. The first byte picks
// the message; whatever parses goes through the checks a server makes
// before acting on it: a layout must pass CheckLayout before its geometry
// drives the byte math (which must then hold its invariants), an address
// must split into host and port, a layout spec must parse or be refused.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "layout/layout.h"
#include "layout/layout_rules.h"
#include "net/rpc_server.h"
#include "rustfs.pb.h"

namespace {
using namespace rustfs;

// The layout math on a layout the MDS would accept: slices cover the range
// exactly, pieces stay inside their shard.
void CheckGeometry(const pb::Layout& l, uint64_t offset, uint64_t length) {
  if (!layout::CheckLayout(l, 32).ok()) return;
  const layout::EcGeometry g = layout::GeometryOf(l);
  if (layout::MinWriteShards(l, uint32_t(offset)) < layout::DataShards(l)) std::abort();
  length %= 4 * g.chunk_size + 1;  // a bounded number of slices
  uint64_t covered = 0;
  for (const auto& s : layout::SplitFileRange(g.chunk_size, offset, length)) {
    if (s.chunk_offset + s.length > g.chunk_size || s.buf_offset != covered) std::abort();
    covered += s.length;
    uint64_t in_chunk = 0;
    for (const auto& p : layout::MapChunkRange(g, s.chunk_offset, s.length)) {
      if (p.shard >= g.k || p.shard_offset + p.length > g.shard_capacity() || p.buf_offset != in_chunk)
        std::abort();
      in_chunk += p.length;
    }
    if (in_chunk != s.length) std::abort();
  }
  if (covered != length && offset + length >= offset) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 8) {
    case 0: {
      pb::SetAttrReq r;
      if (r.ParseFromString(body)) CheckGeometry(r.layout(), r.size(), r.mtime_ns());
      break;
    }
    case 1: {
      pb::CommitChunkReq r;
      if (r.ParseFromString(body)) (void)layout::IsDegraded(r.chunk());
      break;
    }
    case 2: {
      pb::RegisterClientReq r;
      if (r.ParseFromString(body)) (void)net::SplitHostPort(r.callback_address());
      break;
    }
    case 3: {
      pb::Layout l;
      (void)layout::ParseLayoutSpec(body, l);
      break;
    }
    case 4: {
      pb::BatchReadReq r;
      (void)r.ParseFromString(body);
      break;
    }
    case 5: {
      pb::WriteShardReq r;
      (void)r.ParseFromString(body);
      break;
    }
    case 6: {
      pb::LockReq r;
      (void)r.ParseFromString(body);
      break;
    }
    default: {
      pb::RenameReq r;
      (void)r.ParseFromString(body);
      break;
    }
  }
  return 0;
}
