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

bool MapCovers(const FileState& st, uint64_t offset, uint64_t len) {
  const uint64_t cs = st.geo.chunk_size;
  if (cs == 0 || len == 0) return true;  // a special file: no data
  const uint64_t last = offset + len < offset ? UINT64_MAX / cs : (offset + len - 1) / cs;
  return st.mapped.Covers(offset / cs, last + 1);
}

void AddWriter(FileState& st) {
  std::lock_guard lk(st.handoff_mu);
  st.writers++;
}

void RemoveWriter(FileState& st) {
  std::lock_guard lk(st.handoff_mu);
  st.writers--;
}

}  // namespace rustfs::client
