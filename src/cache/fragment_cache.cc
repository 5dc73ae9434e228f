#include "cache/fragment_cache.h"

#include <bit>
#include <algorithm>
#include <cstring>

namespace rustfs::cache {

Result<std::unique_ptr<FragmentCache>> FragmentCache::Create(const Config::FragmentCache& cfg,
                                                             const std::string& metrics) {
  if (cfg.grain_size < kPage || cfg.grain_size > 64 * kPage || !std::has_single_bit(cfg.grain_size))
    return Err(InvalidArgument("fragment_cache.grain_size = " + FormatByteSize(cfg.grain_size) +
                               ": must be a power of two from 4KiB to 256KiB"));
  uint64_t stream_bytes = uint64_t(double(cfg.capacity) * kStreamShare);
  Cache::Options o;
  o.capacity_bytes = cfg.capacity - stream_bytes;
  o.policy = cfg.policy;
  o.expected_value_bytes = cfg.grain_size;
  o.metrics_prefix = metrics + ".fragment_cache";
  // More shards, fewer collisions between reader threads, but each shard
  // must still hold plenty of grains: up to 64 shards of >= 64 grains.
  auto shards_for = [&](uint64_t bytes) {
    return uint32_t(std::bit_floor(
        std::clamp<uint64_t>(bytes / (64 * (cfg.grain_size + Cache::kEntryOverheadBytes)), 1, 64)));
  };
  o.num_shards = shards_for(o.capacity_bytes);
  auto freq = Cache::Create(o);
  if (!freq) return Err(freq.error());
  o.capacity_bytes = stream_bytes;
  o.policy = "lru";
  o.num_shards = shards_for(stream_bytes);
  o.metrics_prefix = metrics + ".stream_cache";
  auto stream = Cache::Create(o);
  if (!stream) return Err(stream.error());
  return std::unique_ptr<FragmentCache>(
      new FragmentCache(cfg.grain_size, std::move(*freq), std::move(*stream), metrics));
}

const char* FragmentCache::PageOf(const char* data, uint64_t mask, uint32_t page) {
  const uint64_t below = mask & ((uint64_t(1) << page) - 1);
  return data + std::popcount(below) * kPage;
}

template <class OnPages>
uint64_t FragmentCache::VisitGrain(const ObjectId& ino, uint64_t g, uint64_t want, Tier first,
                                   OnPages&& on_pages) {
  for (int t : {int(first), 1 - int(first)}) {
    if (!want) break;
    tiers_[t]->LookupVisit({ino, g}, [&](std::string_view v, uint64_t mask) {
      uint64_t have = mask & want;
      if (have) on_pages(v.data(), mask, have);
      want &= ~have;  // a page lives in one tier only
    });
  }
  return want;
}

uint64_t FragmentCache::WantedPages(uint64_t g, uint64_t offset, uint64_t end) const {
  const uint64_t base = g * grain_;
  const uint64_t from = std::max(offset, base), to = std::min(end, base + grain_);
  return PageMask(uint32_t((from - base) / kPage), uint32_t((to - base + kPage - 1) / kPage));
}

std::vector<FragmentCache::Range> FragmentCache::Read(const ObjectId& ino, uint64_t offset, uint64_t len,
                                                      char* dst, Tier first) {
  std::vector<Range> misses;
  uint64_t hit_pages = 0, missed_pages = 0;
  const uint64_t end = offset + len;
  for (uint64_t g = offset / grain_; g * grain_ < end; g++) {
    const uint64_t base = g * grain_;
    const uint64_t want = WantedPages(g, offset, end);
    uint64_t missing = VisitGrain(ino, g, want, first, [&](const char* v, uint64_t mask, uint64_t have) {
      for (uint64_t m = have; m; m &= m - 1) {
        uint32_t page = uint32_t(std::countr_zero(m));
        uint64_t p = base + page * kPage;
        uint64_t s = std::max(p, offset), e = std::min(p + kPage, end);
        const char* src = PageOf(v, mask, page) + (s - p);
        // A random hit's page is in none of the CPU's caches: asking for all
        // its lines at once overlaps their misses, which memcpy's own
        // streaming does only after a few (measured: +10 % cached IOPS).
        for (uint64_t l = 0; l < e - s; l += 64) __builtin_prefetch(src + l);
        std::memcpy(dst + (s - offset), src, e - s);
      }
    });
    hit_pages += std::popcount(want & ~missing);
    missed_pages += std::popcount(missing);
    for (uint64_t m = missing; m; m &= m - 1) {
      uint64_t p = base + uint64_t(std::countr_zero(m)) * kPage;
      if (!misses.empty() && misses.back().offset + misses.back().length == p)
        misses.back().length += kPage;
      else
        misses.push_back({p, kPage});
    }
  }
  if (hit_pages) page_hits_.Add(hit_pages);
  if (missed_pages) page_misses_.Add(missed_pages);
  return misses;
}

// Not a read: the tiers are peeked at, so a prefetcher's check neither
// counts towards a grain's frequency nor as a hit or miss.
bool FragmentCache::Contains(const ObjectId& ino, uint64_t offset, uint64_t len) {
  const uint64_t end = offset + len;
  for (uint64_t g = offset / grain_; g * grain_ < end; g++) {
    uint64_t want = WantedPages(g, offset, end);
    for (const auto& tier : tiers_) {
      uint64_t mask = 0;
      if (tier->Peek({ino, g}, &mask)) want &= ~mask;
    }
    if (want) return false;
  }
  return true;
}

void FragmentCache::Insert(const ObjectId& ino, uint64_t offset, std::string_view data, Tier tier) {
  Cache& cache = *tiers_[int(tier)];
  Cache& other = *tiers_[1 - int(tier)];
  const uint64_t end = offset + data.size();
  for (uint64_t g = offset / grain_; g * grain_ < end; g++) {
    // Peeked, not looked up: the read that missed these pages counted
    // already, and an Insert is no read.
    uint64_t old_mask = 0;
    auto old = cache.Peek({ino, g}, &old_mask);
    uint64_t add_mask = 0;
    for (uint64_t p = std::max(offset, g * grain_); p < std::min(end, (g + 1) * grain_); p += kPage)
      add_mask |= uint64_t(1) << ((p - g * grain_) / kPage);
    uint64_t mask = old_mask | add_mask;  // pages given here replace cached ones
    auto v = PageArena::Make(arena_, uint32_t(std::popcount(mask)));
    if (!v) {  // no memory for it: the cache is advice, but no older copy of these pages may stay
      cache.Erase({ino, g});
      other.Erase({ino, g});
      continue;
    }
    char* out = v->data();
    for (uint32_t page = 0; page < 64; page++) {
      if (!(mask >> page & 1)) continue;
      uint64_t p = g * grain_ + page * kPage;
      if (add_mask >> page & 1) {
        size_t n = std::min<uint64_t>(kPage, end - p);
        std::memcpy(out, data.data() + (p - offset), n);
        std::memset(out + n, 0, kPage - n);  // a short last page: past the end of file
      } else {
        std::memcpy(out, PageOf(old->data(), old_mask, page), kPage);
      }
      out += kPage;
    }
    // A page lives in one tier only, so a lookup never sees two versions.
    if (uint64_t other_mask = 0; other.Peek({ino, g}, &other_mask) && (other_mask & add_mask))
      other.Erase({ino, g});
    cache.Insert({ino, g}, std::move(v), mask);
  }
}

void FragmentCache::Erase(const ObjectId& ino, uint64_t offset, uint64_t len) {
  uint64_t first = offset / grain_;
  uint64_t last = len == 0 ? UINT64_MAX : (offset + len - 1) / grain_;
  for (auto& c : tiers_) {
    if (len != 0 && last - first < 64) {
      for (uint64_t g = first; g <= last; g++) c->Erase({ino, g});
    } else {
      c->EraseIf([&](const Key& k) { return k.ino == ino && k.grain >= first && k.grain <= last; });
    }
  }
}

}  // namespace rustfs::cache
