#include "client/file_state.h"

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

layout::EcGeometry GeometryOf(const pb::Layout& l) {
  layout::EcGeometry g;
  g.k = l.k();
  g.m = l.m();
  g.stripe_unit = l.stripe_unit();
  g.chunk_size = l.chunk_size();
  return g;
}

}  // namespace rustfs::client
