#include "client/record_index.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

namespace rustfs::client {

namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// "offset size" lines.
Result<std::vector<PlanEntry>> ParseText(std::string_view s) {
  std::vector<PlanEntry> out;
  size_t line = 0;
  while (!s.empty()) {
    line++;
    const size_t nl = s.find('\n');
    std::string_view l = s.substr(0, nl);
    s = nl == std::string_view::npos ? std::string_view() : s.substr(nl + 1);
    uint64_t v[2];
    int got = 0;
    const char* p = l.data();
    const char* end = l.data() + l.size();
    for (;;) {
      while (p < end && IsBlank(*p)) p++;
      if (p == end) break;
      if (got == 2) return Err(InvalidArgument("line " + std::to_string(line) + ": more than two fields"));
      auto [q, ec] = std::from_chars(p, end, v[got]);
      if (ec != std::errc() || (q < end && !IsBlank(*q)))
        return Err(InvalidArgument("line " + std::to_string(line) + ": not a number"));
      got++;
      p = q;
    }
    if (got == 0) continue;  // an empty line
    if (got != 2) return Err(InvalidArgument("line " + std::to_string(line) + ": want \"offset size\""));
    out.push_back({v[0], v[1]});
  }
  return out;
}

Result<std::vector<PlanEntry>> ParseBinary(std::string_view s) {
  s.remove_prefix(kRecordIndexMagic.size());
  uint64_t n;
  if (s.size() < 8) return Err(InvalidArgument("truncated header"));
  std::memcpy(&n, s.data(), 8);  // little-endian hosts only, as the wire format
  s.remove_prefix(8);
  if (n > s.size() / 16 || s.size() != n * 16)
    return Err(InvalidArgument(std::to_string(n) + " records in " + std::to_string(s.size()) + " bytes"));
  std::vector<PlanEntry> out(n);
  for (uint64_t i = 0; i < n; i++) {
    std::memcpy(&out[i].offset, s.data() + 16 * i, 8);
    std::memcpy(&out[i].length, s.data() + 16 * i + 8, 8);
  }
  return out;
}

}  // namespace

bool LooksLikeRecordIndex(std::string_view head) {
  if (head.starts_with(kRecordIndexMagic)) return true;
  // DALI text: digits, blanks, digits, end of line.
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < head.size() && std::isdigit(static_cast<unsigned char>(head[i]))) i++;
    return i > from;
  };
  auto blanks = [&] {
    const size_t from = i;
    while (i < head.size() && IsBlank(head[i])) i++;
    return i > from;
  };
  if (!digits() || !blanks() || !digits()) return false;
  blanks();
  return i < head.size() && head[i] == '\n';
}

Result<std::vector<PlanEntry>> ParseRecordIndex(std::string_view bytes) {
  auto parsed = bytes.starts_with(kRecordIndexMagic) ? ParseBinary(bytes) : ParseText(bytes);
  if (!parsed) return parsed;
  if (parsed->empty()) return Err(InvalidArgument("no records"));
  uint64_t prev_end = 0;
  for (size_t i = 0; i < parsed->size(); i++) {
    const PlanEntry& e = (*parsed)[i];
    if (e.length == 0 || e.offset + e.length < e.offset || e.offset < prev_end)
      return Err(InvalidArgument("record " + std::to_string(i) + " (" + std::to_string(e.offset) + "+" +
                                 std::to_string(e.length) + ") is empty or overlaps the one before"));
    prev_end = e.offset + e.length;
  }
  return parsed;
}

void IndexCatalog::Add(uint64_t index_ino, std::vector<PlanEntry> entries) {
  auto idx = std::make_shared<Index>();
  idx->index_ino = index_ino;
  idx->end = entries.empty() ? 0 : entries.back().offset + entries.back().length;
  idx->entries = std::move(entries);
  std::lock_guard lk(mu_);
  std::erase_if(indexes_, [&](const auto& i) { return i->index_ino == index_ino; });
  if (indexes_.size() >= kMaxIndexes) indexes_.erase(indexes_.begin());
  indexes_.push_back(std::move(idx));
  any_.store(true, std::memory_order_release);
}

std::shared_ptr<const IndexCatalog::Index> IndexCatalog::Match(uint64_t ino, uint64_t size, uint64_t offset,
                                                               uint64_t length) const {
  (void)length;  // the kernel's page-sized reads start inside the record, not at it
  if (!any_.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard lk(mu_);
  for (auto it = indexes_.rbegin(); it != indexes_.rend(); ++it) {
    const Index& idx = **it;
    if (idx.end != size || idx.index_ino == ino) continue;
    auto e = std::upper_bound(idx.entries.begin(), idx.entries.end(), offset,
                              [](uint64_t o, const PlanEntry& x) { return o < x.offset; });
    if (e == idx.entries.begin()) continue;
    --e;
    if (offset < e->offset + e->length) return *it;
  }
  return nullptr;
}

}  // namespace rustfs::client
