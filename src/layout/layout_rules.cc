#include "layout/layout_rules.h"

#include <charconv>

namespace rustfs::layout {

pb::ShardKey MakeShardKey(uint64_t ino, const pb::ChunkEntry& c, uint32_t shard) {
  pb::ShardKey k;
  k.set_ino(ino);
  k.set_chunk(c.index());
  k.set_version(c.version());
  k.set_shard(shard);
  return k;
}

layout::EcGeometry GeometryOf(const pb::Layout& l) {
  layout::EcGeometry g;
  g.replicated = l.kind() == 1;
  g.k = g.replicated ? 1 : l.k();
  g.m = g.replicated ? l.replicas() - 1 : l.m();
  g.stripe_unit = l.stripe_unit();
  g.chunk_size = l.chunk_size();
  return g;
}

std::string LayoutSpec(const pb::Layout& l) {
  if (l.kind() == 1) return "replica:" + std::to_string(l.replicas());
  return "ec:" + std::to_string(l.k()) + "+" + std::to_string(l.m());
}

Status ParseLayoutSpec(std::string_view spec, pb::Layout& l) {
  auto bad = [&] {
    return InvalidArgument("layout \"" + std::string(spec) +
                           "\": expected \"ec:K+M\" (e.g. ec:4+2) or \"replica:R\" (e.g. replica:3)");
  };
  auto number = [](std::string_view s, uint32_t& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size() && !s.empty();
  };
  while (!spec.empty() && (spec.back() == '\n' || spec.back() == '\0')) spec.remove_suffix(1);
  if (spec.starts_with("replica:")) {
    uint32_t r;
    if (!number(spec.substr(8), r) || r < 1 || r > 16) return bad();
    l.set_kind(1);
    l.set_replicas(r);
    return Status::Ok();
  }
  if (spec.starts_with("ec:")) {
    std::string_view km = spec.substr(3);
    size_t plus = km.find('+');
    uint32_t k, m;
    if (plus == km.npos || !number(km.substr(0, plus), k) || !number(km.substr(plus + 1), m) ||
        k < 1 || k + m > 32)
      return bad();
    l.set_kind(0);
    l.set_k(k);
    l.set_m(m);
    return Status::Ok();
  }
  return bad();
}

}  // namespace rustfs::layout
