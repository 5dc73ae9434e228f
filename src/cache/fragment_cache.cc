#include "cache/fragment_cache.h"

#include <bit>
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
  auto freq = Cache::Create(o);
  if (!freq) return Err(freq.error());
  o.capacity_bytes = stream_bytes;
  o.policy = "lru";
  o.metrics_prefix = metrics + ".stream_cache";
  auto stream = Cache::Create(o);
  if (!stream) return Err(stream.error());
  return std::unique_ptr<FragmentCache>(
      new FragmentCache(cfg.grain_size, std::move(*freq), std::move(*stream), metrics));
}

uint64_t FragmentCache::MaskOf(const std::string& v) {
  uint64_t m;
  std::memcpy(&m, v.data(), 8);
  return m;
}

const char* FragmentCache::PageOf(const std::string& v, uint32_t page) {
  uint64_t below = MaskOf(v) & ((uint64_t(1) << page) - 1);
  return v.data() + 8 + std::popcount(below) * kPage;
}

FragmentCache::Found FragmentCache::Find(const ObjectId& ino, uint64_t g) {
  Found f;
  for (int t = 0; t < 2; t++) {
    f.v[t] = tiers_[t]->Lookup({ino, g});
    if (f.v[t]) f.mask[t] = MaskOf(*f.v[t]);
  }
  return f;
}

const char* FragmentCache::Found::Page(uint32_t page) const {
  int t = (mask[0] >> page & 1) ? 0 : 1;
  return PageOf(*v[t], page);
}

std::vector<FragmentCache::Range> FragmentCache::Read(const ObjectId& ino, uint64_t offset, uint64_t len,
                                                      char* dst) {
  std::vector<Range> misses;
  auto miss = [&](uint64_t page_off) {
    if (!misses.empty() && misses.back().offset + misses.back().length == page_off)
      misses.back().length += kPage;
    else
      misses.push_back({page_off, kPage});
  };
  const uint64_t end = offset + len;
  for (uint64_t g = offset / grain_; g * grain_ < end; g++) {
    Found f = Find(ino, g);
    uint64_t mask = f.any();
    uint64_t from = std::max(offset, g * grain_) / kPage * kPage;
    uint64_t to = std::min(end, (g + 1) * grain_);
    for (uint64_t p = from; p < to; p += kPage) {
      uint32_t page = uint32_t((p - g * grain_) / kPage);
      if (!(mask >> page & 1)) {
        page_misses_.Inc();
        miss(p);
        continue;
      }
      page_hits_.Inc();
      uint64_t s = std::max(p, offset), e = std::min(p + kPage, end);
      std::memcpy(dst + (s - offset), f.Page(page) + (s - p), e - s);
    }
  }
  return misses;
}

Status FragmentCache::ReadThrough(const ObjectId& ino, uint64_t offset, uint64_t len, char* dst,
                                  Tier tier, const FetchFn& fetch,
                                  const std::function<bool()>& keep) {
  std::string pages;
  for (const auto& m : Read(ino, offset, len, dst)) {
    pages.assign(m.length, '\0');
    RUSTFS_RETURN_IF_ERROR(fetch(m.offset, m.length, pages.data()));
    if (!keep || keep()) Insert(ino, m.offset, pages, tier);
    uint64_t s = std::max(m.offset, offset), e = std::min(m.offset + m.length, offset + len);
    std::memcpy(dst + (s - offset), pages.data() + (s - m.offset), e - s);
  }
  return Status::Ok();
}

bool FragmentCache::Contains(const ObjectId& ino, uint64_t offset, uint64_t len) {
  const uint64_t end = offset + len;
  for (uint64_t g = offset / grain_; g * grain_ < end; g++) {
    uint64_t mask = Find(ino, g).any();
    uint64_t from = std::max(offset, g * grain_) / kPage * kPage;
    uint64_t to = std::min(end, (g + 1) * grain_);
    for (uint64_t p = from; p < to; p += kPage)
      if (!(mask >> ((p - g * grain_) / kPage) & 1)) return false;
  }
  return true;
}

void FragmentCache::Insert(const ObjectId& ino, uint64_t offset, std::string_view data, Tier tier) {
  Cache& cache = *tiers_[int(tier)];
  Cache& other = *tiers_[1 - int(tier)];
  const uint64_t end = offset + data.size();
  for (uint64_t g = offset / grain_; g * grain_ < end; g++) {
    auto old = cache.Lookup({ino, g});
    uint64_t old_mask = old ? MaskOf(*old) : 0;
    uint64_t add_mask = 0;
    for (uint64_t p = std::max(offset, g * grain_); p < std::min(end, (g + 1) * grain_); p += kPage)
      add_mask |= uint64_t(1) << ((p - g * grain_) / kPage);
    uint64_t mask = old_mask | add_mask;  // pages given here replace cached ones
    auto v = std::make_shared<std::string>(8 + std::popcount(mask) * kPage, '\0');
    std::memcpy(v->data(), &mask, 8);
    char* out = v->data() + 8;
    for (uint32_t page = 0; page < 64; page++) {
      if (!(mask >> page & 1)) continue;
      uint64_t p = g * grain_ + page * kPage;
      if (add_mask >> page & 1) {
        size_t n = std::min<uint64_t>(kPage, end - p);
        std::memcpy(out, data.data() + (p - offset), n);  // the rest stays zero
      } else {
        std::memcpy(out, PageOf(*old, page), kPage);
      }
      out += kPage;
    }
    // A page lives in one tier only, so a lookup never sees two versions.
    if (auto o = other.Lookup({ino, g}); o && (MaskOf(*o) & add_mask)) other.Erase({ino, g});
    cache.Insert({ino, g}, std::move(v));
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
