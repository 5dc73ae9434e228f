#include "cache/page_arena.h"

#include <sys/mman.h>

#include <cassert>

namespace rustfs::cache {

PageArena::~PageArena() {
  for (auto& [base, s] : segments_) munmap(s->base, kSegmentBytes);
}

std::shared_ptr<PageArena::Bytes> PageArena::Make(const std::shared_ptr<PageArena>& arena, uint32_t pages) {
  char* p = arena->Allocate(pages);
  if (!p) return nullptr;
  return std::make_shared<Bytes>(arena, p, pages);
}

char* PageArena::Allocate(uint32_t pages) {
  if (pages == 0 || pages > kMaxPages) return nullptr;
  std::lock_guard lock(mu_);
  auto it = free_.lower_bound({pages, nullptr});
  if (it == free_.end()) {
    Segment* s = MapSegment();
    if (!s) return nullptr;
    it = free_.lower_bound({pages, nullptr});
  }
  const auto [len, start] = *it;
  free_.erase(it);
  Segment& s = *SegmentOf(start);
  const uint32_t first = uint32_t((start - s.base) / kPage);
  MarkSpan(s, first, pages, /*free=*/false);
  if (len > pages) AddFree(s, first + pages, len - pages);
  s.free_pages -= pages;
  return start;
}

void PageArena::Free(char* p, uint32_t pages) {
  std::lock_guard lock(mu_);
  Segment* s = SegmentOf(p);
  assert(s != nullptr);
  uint32_t first = uint32_t((p - s->base) / kPage);
  s->free_pages += pages;
  // Wholly free: back to the kernel, but for the last segment (a cache
  // that empties and fills again would map and fault it in each time).
  if (s->free_pages == kMaxPages && segments_.size() > 1) {
    UnmapSegment(s);
    return;
  }
  // Merged with free neighbours, found by their boundary tags.
  if (first > 0 && (s->tag[first - 1] & kFreeBit)) {
    const uint32_t left = s->tag[first - 1] & ~kFreeBit;
    first -= left;
    pages += left;
    free_.erase({left, s->base + size_t(first) * kPage});
  }
  const uint32_t end = first + pages;
  if (end < kMaxPages && (s->tag[end] & kFreeBit)) {
    const uint32_t right = s->tag[end] & ~kFreeBit;
    free_.erase({right, s->base + size_t(end) * kPage});
    pages += right;
  }
  AddFree(*s, first, pages);
}

uint64_t PageArena::mapped_bytes() const {
  std::lock_guard lock(mu_);
  return segments_.size() * kSegmentBytes;
}

uint64_t PageArena::free_bytes() const {
  std::lock_guard lock(mu_);
  uint64_t pages = 0;
  for (const auto& [base, s] : segments_) pages += s->free_pages;
  return pages * kPage;
}

PageArena::Segment* PageArena::SegmentOf(const char* p) {
  auto it = segments_.upper_bound(p);
  if (it == segments_.begin()) return nullptr;
  --it;
  return p < it->first + kSegmentBytes ? it->second.get() : nullptr;
}

void PageArena::MarkSpan(Segment& s, uint32_t first, uint32_t pages, bool free) {
  const uint32_t word = pages | (free ? kFreeBit : 0);
  s.tag[first] = word;
  s.tag[first + pages - 1] = word;
}

void PageArena::AddFree(Segment& s, uint32_t first, uint32_t pages) {
  MarkSpan(s, first, pages, /*free=*/true);
  free_.insert({pages, s.base + size_t(first) * kPage});
}

PageArena::Segment* PageArena::MapSegment() {
  // Over-mapped by a huge page and trimmed, so the segment starts on a
  // 2 MiB boundary (a huge page must be aligned to its size).
  const size_t len = kSegmentBytes + kHugePage;
  void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  char* raw = static_cast<char*>(m);
  char* base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(raw) + kHugePage - 1) & ~uintptr_t(kHugePage - 1));
  if (base > raw) munmap(raw, size_t(base - raw));
  if (char* end = base + kSegmentBytes; end < raw + len) munmap(end, size_t(raw + len - end));
  (void)madvise(base, kSegmentBytes, MADV_HUGEPAGE);  // advice: 4 KiB pages work too
  auto s = std::make_unique<Segment>(Segment{base, std::vector<uint32_t>(kMaxPages), 0});
  Segment* out = s.get();
  segments_.emplace(base, std::move(s));
  AddFree(*out, 0, kMaxPages);
  out->free_pages = kMaxPages;
  return out;
}

void PageArena::UnmapSegment(Segment* s) {
  // Every page is free, in one or more free spans: drop them all.
  for (uint32_t first = 0; first < kMaxPages;) {
    const uint32_t len = s->tag[first] & ~kFreeBit;
    if (s->tag[first] & kFreeBit) free_.erase({len, s->base + size_t(first) * kPage});
    first += len;
  }
  munmap(s->base, kSegmentBytes);
  segments_.erase(s->base);
}

}  // namespace rustfs::cache
