#include "client/file_state.h"

#include <charconv>
#include <iterator>

namespace rustfs::client {

void IntervalSet::Add(uint64_t start, uint64_t end) {
  if (start >= end) return;
  auto it = m_.upper_bound(start);
  if (it != m_.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= start) {  // touching or overlapping: absorb
      start = prev->first;
      end = std::max(end, prev->second);
      it = m_.erase(prev);
    }
  }
  while (it != m_.end() && it->first <= end) {
    end = std::max(end, it->second);
    it = m_.erase(it);
  }
  m_[start] = end;
}

bool IntervalSet::Covers(uint64_t start, uint64_t end) const {
  if (start >= end) return true;
  auto it = m_.upper_bound(start);
  if (it == m_.begin()) return false;
  --it;
  return it->first <= start && it->second >= end;
}

bool IntervalSet::Overlaps(uint64_t start, uint64_t end) const {
  auto it = m_.lower_bound(end);
  if (it == m_.begin()) return false;
  --it;
  return it->second > start;
}

bool MapCovers(const FileState& st, uint64_t offset, uint64_t len) {
  const uint64_t cs = st.geo.chunk_size;
  if (cs == 0 || len == 0) return true;  // a special file: no data
  const uint64_t last = offset + len < offset ? UINT64_MAX / cs : (offset + len - 1) / cs;
  return st.mapped.Covers(offset / cs, last + 1);
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

}  // namespace rustfs::client
