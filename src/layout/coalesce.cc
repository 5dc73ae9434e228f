#include "layout/coalesce.h"

#include <algorithm>

namespace rustfs::layout {

std::vector<CoalescedRead> CoalesceReads(std::vector<RangeRead> reads, uint64_t gap_threshold) {
  std::sort(reads.begin(), reads.end(), [](const RangeRead& a, const RangeRead& b) {
    return a.offset < b.offset || (a.offset == b.offset && a.id < b.id);
  });
  std::vector<CoalescedRead> out;
  for (const RangeRead& r : reads) {
    if (!out.empty() && r.offset <= out.back().end() + gap_threshold) {
      CoalescedRead& c = out.back();
      c.length = std::max(c.end(), r.offset + r.length) - c.offset;
      c.members.push_back(r);
    } else {
      out.push_back({r.offset, r.length, {r}});
    }
  }
  return out;
}

}  // namespace rustfs::layout
