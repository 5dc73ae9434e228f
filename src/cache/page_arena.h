// Memory for cached grains, in whole 4 KiB pages, from mappings the kernel
// is asked to back with 2 MiB pages (madvise MADV_HUGEPAGE).
//
// Why: a cached random read copies one page that is in none of the CPU's
// caches nor, on 4 KiB pages, in its TLB: a gigabyte cache is 262,144 such
// pages, so every hit waits for a page walk before its copy can start
// (perf: 71-78 % of FragmentCache::Read's samples, on the page's first
// prefetch). On 2 MiB pages the same gigabyte is 512 TLB entries. Measured
// with client_bench cached-read on 2 threads: +10-19 % IOPS. malloc could
// do it for the whole process (GLIBC_TUNABLES=glibc.malloc.hugetlb=1), but
// the client is a library in the user's process, whose malloc is theirs.
//
// A page allocator with boundary tags (spans of free pages coalesce with
// free neighbours, best fit by length then address), over segments of
// kSegmentBytes mapped as needed with MAP_NORESERVE: the kernel backs only
// what is touched. A segment that becomes wholly free is unmapped (but the
// last one), so an emptied cache gives its memory back; free spans inside a
// segment in use stay resident (as with malloc) for the next values.
//
// Thread-safe (one mutex: allocations happen when a grain is inserted, on
// the miss path, never on a hit). Where THP is unavailable the madvise
// fails quietly and the arena runs on 4 KiB pages. The first touch of each
// 2 MiB page zeroes it (and, with THP defrag "madvise", may compact
// memory): a cost of filling the cache, once per 2 MiB, on the miss path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

namespace rustfs::cache {

class PageArena {
 public:
  static constexpr size_t kPage = 4096;                // bytes
  static constexpr size_t kHugePage = 2 << 20;         // bytes; segment alignment
  static constexpr size_t kSegmentBytes = 64 << 20;    // bytes mapped at a time
  static constexpr uint32_t kMaxPages = kSegmentBytes / kPage;

  PageArena() = default;
  PageArena(const PageArena&) = delete;
  PageArena& operator=(const PageArena&) = delete;
  // Unmaps every segment: every allocation must have been freed (Bytes
  // keeps its arena alive).
  ~PageArena();

  // `pages` (1..kMaxPages) contiguous pages, page-aligned, not zeroed; null
  // if the kernel refuses a new mapping.
  char* Allocate(uint32_t pages);
  // Returns what Allocate(pages) gave.
  void Free(char* p, uint32_t pages);

  uint64_t mapped_bytes() const;  // segments mapped now
  uint64_t free_bytes() const;    // pages mapped and not allocated

  // Immutable-once-filled bytes in an arena, for ShardedCache values
  // (data(), size()); returned to the arena when destroyed. Holds the arena.
  class Bytes {
   public:
    Bytes(std::shared_ptr<PageArena> arena, char* data, uint32_t pages)
        : arena_(std::move(arena)), data_(data), pages_(pages) {}
    Bytes(const Bytes&) = delete;
    Bytes& operator=(const Bytes&) = delete;
    ~Bytes() { arena_->Free(data_, pages_); }
    char* data() { return data_; }
    const char* data() const { return data_; }
    size_t size() const { return size_t(pages_) * kPage; }

   private:
    std::shared_ptr<PageArena> arena_;
    char* data_;
    uint32_t pages_;
  };
  // `pages` pages of `arena` as Bytes; null as Allocate.
  static std::shared_ptr<Bytes> Make(const std::shared_ptr<PageArena>& arena, uint32_t pages);

 private:
  struct Segment {
    char* base;
    // Boundary tags, one word per page: the first and the last page of
    // every span (free or allocated) hold its length in pages, with
    // kFreeBit when free. Other pages' words are stale.
    std::vector<uint32_t> tag;
    uint32_t free_pages;
  };
  static constexpr uint32_t kFreeBit = 1u << 31;

  Segment* SegmentOf(const char* p);
  void MarkSpan(Segment& s, uint32_t first, uint32_t pages, bool free);
  void AddFree(Segment& s, uint32_t first, uint32_t pages);
  Segment* MapSegment();
  void UnmapSegment(Segment* s);

  mutable std::mutex mu_;
  std::map<const char*, std::unique_ptr<Segment>> segments_;  // by base
  // Free spans (pages, start): the shortest that fits, lowest address
  // first, so use stays packed at the start of the segments.
  std::set<std::pair<uint32_t, char*>> free_;
};

}  // namespace rustfs::cache
