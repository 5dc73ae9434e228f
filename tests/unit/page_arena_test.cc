// PageArena against a reference: a map of the live allocations, over random
// allocations and frees. Each allocation is filled with a pattern of its
// own and checked when freed, so two live allocations that overlapped
// would show; the arena's counters must match the reference's sums.
#include "cache/page_arena.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <vector>

namespace rustfs::cache {
namespace {

constexpr size_t P = PageArena::kPage;

struct Live {
  uint32_t pages;
  uint8_t fill;
};

void Fill(char* p, const Live& l) { std::memset(p, l.fill, l.pages * P); }

bool Intact(const char* p, const Live& l) {
  for (size_t i = 0; i < l.pages * P; i += 512)  // a byte per 512: overlap shows anywhere
    if (uint8_t(p[i]) != l.fill) return false;
  return uint8_t(p[l.pages * P - 1]) == l.fill;
}

TEST(PageArenaTest, RefusesSizesOutsideASegment) {
  PageArena a;
  EXPECT_EQ(a.Allocate(0), nullptr);
  EXPECT_EQ(a.Allocate(PageArena::kMaxPages + 1), nullptr);
  EXPECT_EQ(a.mapped_bytes(), 0u);
}

TEST(PageArenaTest, MatchesReferenceOverRandomAllocationsAndFrees) {
  std::mt19937_64 rng(7);
  PageArena a;
  std::map<char*, Live> live;  // by address
  uint64_t live_pages = 0;
  for (int step = 0; step < 20000; step++) {
    if (live.empty() || rng() % 100 < 55) {
      // Mostly grain-sized (1..64 pages), sometimes large, so spans split
      // and coalesce across several segments.
      const uint32_t pages = rng() % 50 ? 1 + rng() % 64 : 1 + rng() % 4096;
      char* p = a.Allocate(pages);
      ASSERT_NE(p, nullptr);
      ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % P, 0u);
      // No overlap with its neighbours in the reference.
      auto next = live.lower_bound(p);
      if (next != live.end()) ASSERT_LE(p + pages * P, next->first);
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second.pages * P, p);
      }
      Live l{pages, uint8_t(rng())};
      Fill(p, l);
      live.emplace(p, l);
      live_pages += pages;
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      ASSERT_TRUE(Intact(it->first, it->second)) << "step " << step;
      a.Free(it->first, it->second.pages);
      live_pages -= it->second.pages;
      live.erase(it);
    }
    if (step % 500 == 0) ASSERT_EQ(a.mapped_bytes() - a.free_bytes(), live_pages * P);
  }
  for (auto& [p, l] : live) {
    ASSERT_TRUE(Intact(p, l));
    a.Free(p, l.pages);
  }
  // Everything free: one segment is kept, wholly free and coalesced into
  // one span (a whole segment fits without mapping another).
  EXPECT_EQ(a.mapped_bytes(), PageArena::kSegmentBytes);
  EXPECT_EQ(a.free_bytes(), PageArena::kSegmentBytes);
  char* whole = a.Allocate(PageArena::kMaxPages);
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(a.mapped_bytes(), PageArena::kSegmentBytes);
  a.Free(whole, PageArena::kMaxPages);
}

// Freed neighbours merge: after freeing the middle of three spans and then
// both sides, the three make one span that a request of their total fits
// in place, at the first one's address.
TEST(PageArenaTest, FreeSpansCoalesceWithBothNeighbours) {
  PageArena a;
  char* x = a.Allocate(3);
  char* y = a.Allocate(5);
  char* z = a.Allocate(7);
  char* guard = a.Allocate(1);  // keeps z's right side allocated
  ASSERT_TRUE(x && y && z && guard);
  ASSERT_EQ(y, x + 3 * P);
  ASSERT_EQ(z, y + 5 * P);
  // Segments start on a huge-page boundary, and a fresh one fills from its start.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(x) % PageArena::kHugePage, 0u);
  a.Free(y, 5);
  a.Free(x, 3);
  a.Free(z, 7);
  EXPECT_EQ(a.Allocate(15), x);
  a.Free(x, 15);
  a.Free(guard, 1);
}

// The segments beyond the last are unmapped when they empty.
TEST(PageArenaTest, EmptiedSegmentsGoBackButTheLast) {
  PageArena a;
  std::vector<char*> held;
  for (int i = 0; i < 3; i++) held.push_back(a.Allocate(PageArena::kMaxPages));
  ASSERT_EQ(a.mapped_bytes(), 3 * PageArena::kSegmentBytes);
  for (char* p : held) a.Free(p, PageArena::kMaxPages);
  EXPECT_EQ(a.mapped_bytes(), PageArena::kSegmentBytes);
}

// A value keeps its arena alive after the arena's owner lets go.
TEST(PageArenaTest, BytesOutliveTheirArenasOwner) {
  auto arena = std::make_shared<PageArena>();
  auto v = PageArena::Make(arena, 2);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->size(), 2 * P);
  std::weak_ptr<PageArena> watch = arena;
  arena.reset();
  std::memset(v->data(), 0x5a, v->size());  // still mapped
  EXPECT_FALSE(watch.expired());
  v.reset();
  EXPECT_TRUE(watch.expired());
}

// Threads allocating and freeing at once (values die on any thread) keep
// the arena consistent: every pattern intact, everything returned.
TEST(PageArenaTest, ConcurrentAllocationsStayDisjoint) {
  PageArena a;
  std::vector<std::thread> threads;
  std::atomic<bool> bad{false};
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::vector<std::pair<char*, Live>> mine;
      for (int i = 0; i < 5000; i++) {
        if (mine.empty() || rng() % 2) {
          Live l{uint32_t(1 + rng() % 16), uint8_t(t * 50 + i)};
          char* p = a.Allocate(l.pages);
          if (!p) return bad.store(true);
          Fill(p, l);
          mine.push_back({p, l});
        } else {
          auto [p, l] = mine.back();
          mine.pop_back();
          if (!Intact(p, l)) bad.store(true);
          a.Free(p, l.pages);
        }
      }
      for (auto& [p, l] : mine) {
        if (!Intact(p, l)) bad.store(true);
        a.Free(p, l.pages);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_FALSE(bad.load());
  EXPECT_EQ(a.free_bytes(), a.mapped_bytes());
}

}  // namespace
}  // namespace rustfs::cache
