// cache::ReadThrough against brute force: random batches of reads of two
// objects (any offset and length), a fetch that serves pages from the
// objects' bytes and fails some on purpose, and a model of which pages the
// cache holds (it is big enough never to evict). Every read that succeeds
// holds exactly the object's bytes; a read fails exactly when a piece it
// needed failed; the cache asks for exactly the pages of each read it does
// not hold, page-aligned, and a piece inside its read is fetched in place.
#include "cache/read_through.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace rustfs::cache {
namespace {

constexpr uint64_t P = FragmentCache::kPage;
constexpr uint64_t kObjectBytes = 2048 * 1024 + 123;  // not a whole number of pages

Config::FragmentCache Cfg() {
  Config::FragmentCache c;
  c.capacity = 256 << 20;  // far more than both objects: nothing is evicted
  c.grain_size = 64 * 1024;
  return c;
}

struct World {
  std::map<uint64_t, std::string> bytes;             // object a -> its bytes
  std::set<std::pair<uint64_t, uint64_t>> bad;       // (object, page) whose fetch fails
  std::map<std::pair<uint64_t, uint64_t>, int> cached;  // model: (object, page) -> the tier holding it
  std::vector<ThroughPiece> fetched;                 // the last fetch's pieces

  char ByteAt(uint64_t obj, uint64_t at) const {
    const std::string& b = bytes.at(obj);
    return at < b.size() ? b[at] : '\0';
  }
};

TEST(ReadThroughTest, MatchesBruteForceWithFailuresAndInPlacePieces) {
  std::mt19937_64 rng(21);
  World w;
  for (uint64_t obj : {1, 2}) {
    std::string b(kObjectBytes, '\0');
    for (auto& c : b) c = char(rng());
    w.bytes[obj] = b;
  }
  for (int i = 0; i < 30; i++) w.bad.insert({1 + rng() % 2, rng() % (kObjectBytes / P + 1)});
  auto fc = FragmentCache::Create(Cfg(), "read_through_test");
  ASSERT_TRUE(fc);
  uint64_t in_place = 0, staged = 0, failed_reads = 0;
  for (int round = 0; round < 400; round++) {
    const size_t n = 1 + rng() % 6;
    std::vector<ThroughRead> reads(n);
    std::vector<std::string> dst(n);
    for (size_t i = 0; i < n; i++) {
      const uint64_t obj = 1 + rng() % 2;
      // Half of them in whole pages, as a kernel reads through FUSE.
      const bool pages = rng() % 2;
      const uint64_t off = pages ? rng() % (kObjectBytes / P) * P : rng() % kObjectBytes;
      const uint64_t len = std::min<uint64_t>(pages ? (1 + rng() % 3) * P : rng() % (3 * P) + 1, kObjectBytes - off);
      dst[i].assign(len, '\x5a');
      reads[i] = {ObjectId{obj}, off, len, dst[i].data(),
                  rng() % 2 ? FragmentCache::Tier::kFrequency : FragmentCache::Tier::kStream};
    }
    const auto cached_before = w.cached;
    w.fetched.clear();  // fetch is not called when every read is a hit
    const bool keep = rng() % 4 != 0;
    Status first_bad = Status::Ok();
    Status got = ReadThrough(
        fc->get(), std::span(reads),
        [&](std::span<ThroughPiece> pieces) {
          w.fetched.assign(pieces.begin(), pieces.end());
          for (ThroughPiece& p : pieces) {
            const uint64_t obj = reads[p.read].id.a;
            ASSERT_EQ(p.offset % P, 0u);
            ASSERT_EQ(p.length % P, 0u);
            bool fails = false;
            for (uint64_t at = p.offset; at < p.offset + p.length; at++) p.buf[at - p.offset] = w.ByteAt(obj, at);
            for (uint64_t pg = p.offset / P; pg < (p.offset + p.length) / P; pg++) fails |= w.bad.count({obj, pg}) > 0;
            p.status = fails ? IoError("page " + std::to_string(p.offset / P) + " is bad") : Status::Ok();
            if (fails && first_bad.ok()) first_bad = p.status;
          }
        },
        [&] { return keep; });
    // Pieces: exactly each read's pages the cache lacked, in place when inside.
    std::map<size_t, std::set<uint64_t>> asked;  // read -> pages fetched for it
    for (const ThroughPiece& p : w.fetched) {
      const ThroughRead& r = reads[p.read];
      for (uint64_t pg = p.offset / P; pg < (p.offset + p.length) / P; pg++)
        EXPECT_TRUE(asked[p.read].insert(pg).second) << "page fetched twice for one read";
      const bool inside = p.offset >= r.offset && p.offset + p.length <= r.offset + r.length;
      EXPECT_EQ(p.staged, !inside);
      if (inside) EXPECT_EQ(p.buf, r.dst + (p.offset - r.offset));
      (inside ? in_place : staged)++;
    }
    for (size_t i = 0; i < n; i++) {
      std::set<uint64_t> lacked;
      for (uint64_t pg = reads[i].offset / P; pg <= (reads[i].offset + reads[i].length - 1) / P; pg++)
        if (!cached_before.count({reads[i].id.a, pg})) lacked.insert(pg);
      EXPECT_EQ(asked[i], lacked) << "round " << round << " read " << i;
      bool needed_bad = false;
      for (uint64_t pg : lacked) needed_bad |= w.bad.count({reads[i].id.a, pg}) > 0;
      EXPECT_EQ(reads[i].status.ok(), !needed_bad) << "round " << round << " read " << i;
      if (needed_bad) {
        failed_reads++;
        continue;
      }
      std::string want(reads[i].length, '\0');
      for (uint64_t k = 0; k < want.size(); k++) want[k] = w.ByteAt(reads[i].id.a, reads[i].offset + k);
      EXPECT_EQ(dst[i], want) << "round " << round << " read " << i;
    }
    EXPECT_EQ(got.ok(), first_bad.ok());
    if (!got.ok()) EXPECT_EQ(got.message(), first_bad.message());
    // The model of what is cached now: each piece fetched whole is inserted
    // in its read's tier, grain by grain; a page lives in one tier only, so
    // the other tier's copy of a grain some inserted page is in goes whole.
    constexpr uint64_t kGrainPages = 16;
    for (const ThroughPiece& p : w.fetched) {
      const uint64_t obj = reads[p.read].id.a;
      const int tier = int(reads[p.read].tier);
      bool ok = keep;
      for (uint64_t pg = p.offset / P; pg < (p.offset + p.length) / P; pg++) ok &= !w.bad.count({obj, pg});
      if (!ok) continue;
      for (uint64_t pg = p.offset / P; pg < (p.offset + p.length) / P; pg++) {
        auto it = w.cached.find({obj, pg});
        if (it != w.cached.end() && it->second != tier) {
          const uint64_t g = pg / kGrainPages;
          for (uint64_t q = g * kGrainPages; q < (g + 1) * kGrainPages; q++)
            if (auto o = w.cached.find({obj, q}); o != w.cached.end() && o->second != tier) w.cached.erase(o);
        }
        w.cached[{obj, pg}] = tier;
      }
    }
    // The cache holds what the model says.
    for (uint64_t obj : {1, 2})
      for (uint64_t pg = 0; pg <= kObjectBytes / P; pg++)
        ASSERT_EQ((*fc)->Contains(ObjectId{obj}, pg * P, P), w.cached.count({obj, pg}) > 0)
            << "round " << round << " object " << obj << " page " << pg;
  }
  // The walk exercised every case.
  EXPECT_GT(in_place, 50u);
  EXPECT_GT(staged, 50u);
  EXPECT_GT(failed_reads, 10u);
}

TEST(ReadThroughTest, WithoutACacheEachReadIsOnePieceInPlace) {
  std::vector<std::string> dst = {std::string(10, '\0'), std::string(0, '\0'), std::string(5000, '\0')};
  std::vector<ThroughRead> reads = {{ObjectId{uint64_t(1)}, 3, 10, dst[0].data()},
                                    {ObjectId{uint64_t(1)}, 50, 0, dst[1].data()},
                                    {ObjectId{uint64_t(2)}, 4097, 5000, dst[2].data()}};
  std::vector<ThroughPiece> seen;
  Status got = ReadThrough(
      nullptr, std::span(reads),
      [&](std::span<ThroughPiece> pieces) {
        for (ThroughPiece& p : pieces) {
          std::memset(p.buf, 'x', p.length);
          p.status = p.read == 2 ? Unavailable("down") : Status::Ok();
        }
        seen.assign(pieces.begin(), pieces.end());
      },
      [] { return true; });
  ASSERT_EQ(seen.size(), 2u);  // the empty read asks for nothing
  EXPECT_EQ(seen[0].offset, 3u);
  EXPECT_EQ(seen[0].length, 10u);
  EXPECT_EQ(seen[0].buf, dst[0].data());
  EXPECT_EQ(seen[1].offset, 4097u);
  EXPECT_EQ(seen[1].buf, dst[2].data());
  EXPECT_FALSE(seen[0].staged || seen[1].staged);
  EXPECT_EQ(dst[0], std::string(10, 'x'));
  EXPECT_TRUE(reads[0].status.ok() && reads[1].status.ok());
  EXPECT_EQ(reads[2].status.code(), Code::kUnavailable);
  EXPECT_EQ(got.code(), Code::kUnavailable);
}

}  // namespace
}  // namespace rustfs::cache
