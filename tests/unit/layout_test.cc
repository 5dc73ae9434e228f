// Layout math is checked against a byte-by-byte reference: for every byte of a
// range the expected location is computed straight from the LLD-002 formula,
// and the pieces returned by the fast code must cover each byte exactly once at
// that location. The reference never looks at stripe units or rows, so it
// cannot share a boundary bug with the code under test.
#include "layout/layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace rustfs::layout {
namespace {

struct BytePos {
  uint32_t shard;
  uint64_t shard_offset;
};

// The formula from layout.h, applied to a single byte of a chunk.
BytePos RefLocate(const EcGeometry& g, uint64_t b) {
  const uint64_t s = g.stripe_unit;
  return BytePos{static_cast<uint32_t>((b / s) % g.k), (b / (s * g.k)) * s + b % s};
}

std::string Describe(const EcGeometry& g, uint64_t offset, uint64_t length) {
  return "k=" + std::to_string(g.k) + " S=" + std::to_string(g.stripe_unit) +
         " chunk=" + std::to_string(g.chunk_size) + " offset=" + std::to_string(offset) +
         " length=" + std::to_string(length);
}

// Checks MapChunkRange(g, offset, length) against the byte-by-byte reference.
void CheckMapAgainstReference(const EcGeometry& g, uint64_t offset, uint64_t length) {
  SCOPED_TRACE(Describe(g, offset, length));
  const std::vector<ShardPiece> pieces = MapChunkRange(g, offset, length);

  std::vector<uint8_t> covered(length, 0);
  uint64_t prev_end = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const ShardPiece& p = pieces[i];
    ASSERT_GT(p.length, 0u);
    ASSERT_LE(p.length, g.stripe_unit);
    ASSERT_LT(p.shard, g.k);
    // Wholly inside one stripe unit of the shard.
    ASSERT_EQ(p.shard_offset / g.stripe_unit, (p.shard_offset + p.length - 1) / g.stripe_unit);
    // Chunk-offset order: each piece starts where the previous one ended.
    ASSERT_EQ(p.buf_offset, prev_end) << "piece " << i;
    prev_end = p.buf_offset + p.length;
    ASSERT_LE(prev_end, length);
    for (uint64_t j = 0; j < p.length; ++j) {
      const uint64_t bo = p.buf_offset + j;
      const BytePos want = RefLocate(g, offset + bo);
      ASSERT_EQ(covered[bo], 0) << "byte " << bo << " covered twice";
      covered[bo] = 1;
      ASSERT_EQ(p.shard, want.shard) << "byte " << bo;
      ASSERT_EQ(p.shard_offset + j, want.shard_offset) << "byte " << bo;
    }
  }
  for (uint64_t bo = 0; bo < length; ++bo) ASSERT_EQ(covered[bo], 1) << "byte " << bo << " missed";
}

// Checks the invariants of MergeShardPieces(input).
void CheckMerge(const std::vector<ShardPiece>& input) {
  const std::vector<ShardRead> reads = MergeShardPieces(input);

  // Every input piece appears in exactly one read, and nothing else does.
  std::vector<std::tuple<uint32_t, uint64_t, uint64_t, uint64_t>> in_keys, out_keys;
  for (const ShardPiece& p : input) in_keys.emplace_back(p.shard, p.shard_offset, p.length, p.buf_offset);
  for (const ShardRead& r : reads) {
    for (const ShardPiece& p : r.pieces) {
      out_keys.emplace_back(p.shard, p.shard_offset, p.length, p.buf_offset);
    }
  }
  std::sort(in_keys.begin(), in_keys.end());
  std::sort(out_keys.begin(), out_keys.end());
  ASSERT_EQ(in_keys, out_keys);

  for (size_t i = 0; i < reads.size(); ++i) {
    const ShardRead& r = reads[i];
    ASSERT_FALSE(r.pieces.empty());
    ASSERT_GT(r.length, 0u);
    // The read covers exactly the bytes of its pieces, with no gap: a gap would
    // mean reading bytes nobody asked for.
    std::vector<uint8_t> covered(r.length, 0);
    for (const ShardPiece& p : r.pieces) {
      ASSERT_EQ(p.shard, r.shard);
      ASSERT_GE(p.shard_offset, r.shard_offset);
      ASSERT_LE(p.shard_offset + p.length, r.shard_offset + r.length);
      for (uint64_t j = 0; j < p.length; ++j) covered[p.shard_offset - r.shard_offset + j] = 1;
    }
    for (uint64_t j = 0; j < r.length; ++j) ASSERT_EQ(covered[j], 1) << "gap in read " << i;
    // Pieces inside a read are in shard order, so a caller can scatter with a
    // single forward pass.
    for (size_t j = 1; j < r.pieces.size(); ++j) {
      ASSERT_LE(r.pieces[j - 1].shard_offset, r.pieces[j].shard_offset);
    }
    if (i > 0) {
      const ShardRead& prev = reads[i - 1];
      // Sorted by (shard, shard_offset).
      ASSERT_TRUE(std::tie(prev.shard, prev.shard_offset) < std::tie(r.shard, r.shard_offset));
      // Maximal: a read of the same shard never touches the previous one.
      if (prev.shard == r.shard) {
        ASSERT_GT(r.shard_offset, prev.shard_offset + prev.length) << "reads " << i - 1 << "," << i
                                                                   << " should have merged";
      }
    }
  }
}

// Random geometry: K in 1..12, S a multiple of 4096 (mostly small so ranges
// cross many units), chunk = 1..max_rows rows.
EcGeometry RandomGeometry(std::mt19937_64& rng, uint64_t max_rows = 8) {
  static const uint64_t kUnits[] = {4096, 4096, 8192, 12288, 16384, 65536};
  EcGeometry g;
  g.k = std::uniform_int_distribution<uint32_t>(1, 12)(rng);
  g.m = std::uniform_int_distribution<uint32_t>(0, 4)(rng);
  g.stripe_unit = kUnits[std::uniform_int_distribution<size_t>(0, std::size(kUnits) - 1)(rng)];
  g.chunk_size = g.row_bytes() * std::uniform_int_distribution<uint64_t>(1, max_rows)(rng);
  return g;
}

// A point in [0, limit], biased towards stripe-unit and row boundaries (and a
// few bytes either side), where off-by-one errors live.
uint64_t RandomPoint(std::mt19937_64& rng, uint64_t limit, uint64_t unit, uint64_t row) {
  auto pick = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  uint64_t p;
  switch (pick(0, 3)) {
    case 0: p = pick(0, limit); break;
    case 1: p = pick(0, limit / unit) * unit; break;
    case 2: p = pick(0, limit / row) * row; break;
    default: p = limit; break;
  }
  if (pick(0, 1) == 1) {
    const int64_t delta = static_cast<int64_t>(pick(0, 6)) - 3;
    if (delta < 0 && p < static_cast<uint64_t>(-delta)) {
      p = 0;
    } else {
      p += delta;
    }
  }
  return std::min(p, limit);
}

TEST(RangeFitsFileTest, EndsAtMostAtTheLargestOffTValue) {
  constexpr uint64_t kMax = uint64_t(INT64_MAX);  // off_t's largest value
  EXPECT_TRUE(RangeFitsFile(0, 0));
  EXPECT_TRUE(RangeFitsFile(0, kMax));
  EXPECT_TRUE(RangeFitsFile(kMax, 0));
  EXPECT_TRUE(RangeFitsFile(kMax - 4096, 4096));
  EXPECT_FALSE(RangeFitsFile(kMax - 4095, 4096));
  EXPECT_FALSE(RangeFitsFile(kMax + 1, 0));
  EXPECT_FALSE(RangeFitsFile(0, kMax + 1));
  EXPECT_FALSE(RangeFitsFile(UINT64_MAX - 10, 100));  // wraps past 2^64
  EXPECT_FALSE(RangeFitsFile(UINT64_MAX, UINT64_MAX));
}

TEST(EcGeometryTest, DerivedSizes) {
  EcGeometry g;  // defaults: 4+2, 64 KiB units, 4 MiB chunks
  EXPECT_EQ(g.row_bytes(), 4u * 65536);
  EXPECT_EQ(g.rows_per_chunk(), 16u);
  EXPECT_EQ(g.shard_capacity(), 1u << 20);
}

TEST(MapChunkRangeTest, EmptyRangeGivesNoPieces) {
  EcGeometry g;
  EXPECT_TRUE(MapChunkRange(g, 0, 0).empty());
  EXPECT_TRUE(MapChunkRange(g, 12345, 0).empty());
}

TEST(MapChunkRangeTest, KnownPieces) {
  EcGeometry g{.k = 4, .m = 2, .stripe_unit = 4096, .chunk_size = 4 * 4096 * 4};
  // Straddles the unit boundary between shard 0 and shard 1 in row 0.
  auto p = MapChunkRange(g, 4000, 200);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].shard, 0u);
  EXPECT_EQ(p[0].shard_offset, 4000u);
  EXPECT_EQ(p[0].length, 96u);
  EXPECT_EQ(p[0].buf_offset, 0u);
  EXPECT_EQ(p[1].shard, 1u);
  EXPECT_EQ(p[1].shard_offset, 0u);
  EXPECT_EQ(p[1].length, 104u);
  EXPECT_EQ(p[1].buf_offset, 96u);

  // Straddles the row boundary: last unit of row 0 (shard 3) to the first unit
  // of row 1 (shard 0, shard offset S).
  p = MapChunkRange(g, 4 * 4096 - 10, 20);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].shard, 3u);
  EXPECT_EQ(p[0].shard_offset, 4096u - 10);
  EXPECT_EQ(p[0].length, 10u);
  EXPECT_EQ(p[1].shard, 0u);
  EXPECT_EQ(p[1].shard_offset, 4096u);
  EXPECT_EQ(p[1].length, 10u);
  EXPECT_EQ(p[1].buf_offset, 10u);

  // A whole chunk is one piece per stripe unit, shards in round-robin order.
  p = MapChunkRange(g, 0, g.chunk_size);
  ASSERT_EQ(p.size(), 16u);
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(p[i].shard, i % 4);
    EXPECT_EQ(p[i].shard_offset, (i / 4) * 4096);
    EXPECT_EQ(p[i].length, 4096u);
    EXPECT_EQ(p[i].buf_offset, i * 4096);
  }
}

TEST(MapChunkRangeTest, SingleShardIsIdentity) {
  EcGeometry g{.k = 1, .m = 2, .stripe_unit = 4096, .chunk_size = 4096 * 5};
  auto p = MapChunkRange(g, 100, 4096 * 3);
  ASSERT_EQ(p.size(), 4u);
  uint64_t pos = 100;
  for (const auto& piece : p) {
    EXPECT_EQ(piece.shard, 0u);
    EXPECT_EQ(piece.shard_offset, pos);
    pos += piece.length;
  }
  EXPECT_EQ(pos, 100u + 4096 * 3);
}

TEST(MapChunkRangeTest, MatchesBruteForceOnRandomRanges) {
  std::mt19937_64 rng(20240601);
  for (int iter = 0; iter < 1500; ++iter) {
    const EcGeometry g = RandomGeometry(rng);
    const uint64_t a = RandomPoint(rng, g.chunk_size, g.stripe_unit, g.row_bytes());
    // Keep lengths bounded so the byte-by-byte check stays fast, but long
    // enough to cross several units and rows.
    const uint64_t max_len = std::min<uint64_t>(g.chunk_size - a, 6 * g.stripe_unit + 100);
    uint64_t len;
    if (iter % 3 == 0) {
      len = std::uniform_int_distribution<uint64_t>(0, max_len)(rng);
    } else {
      const uint64_t b = RandomPoint(rng, std::min(g.chunk_size, a + max_len), g.stripe_unit,
                                     g.row_bytes());
      len = b > a ? b - a : 0;
    }
    CheckMapAgainstReference(g, a, len);
    if (HasFatalFailure()) return;
  }
}

TEST(MapChunkRangeTest, MatchesBruteForceOnWholeChunks) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 40; ++iter) {
    const EcGeometry g = RandomGeometry(rng, 3);
    CheckMapAgainstReference(g, 0, g.chunk_size);
    if (HasFatalFailure()) return;
    // Up to the very last byte of the chunk.
    CheckMapAgainstReference(g, g.chunk_size - 1, 1);
    if (HasFatalFailure()) return;
    CheckMapAgainstReference(g, g.stripe_unit - 1, g.chunk_size - g.stripe_unit + 1);
    if (HasFatalFailure()) return;
  }
}

TEST(MergeShardPiecesTest, EmptyInput) { EXPECT_TRUE(MergeShardPieces({}).empty()); }

TEST(MergeShardPiecesTest, ConsecutiveRowsOfAShardMerge) {
  EcGeometry g{.k = 4, .m = 2, .stripe_unit = 4096, .chunk_size = 4 * 4096 * 4};
  // Two full rows: each shard is read once, 2 units long, serving 2 pieces.
  auto reads = MergeShardPieces(MapChunkRange(g, 0, 2 * g.row_bytes()));
  ASSERT_EQ(reads.size(), 4u);
  for (uint32_t s = 0; s < 4; ++s) {
    EXPECT_EQ(reads[s].shard, s);
    EXPECT_EQ(reads[s].shard_offset, 0u);
    EXPECT_EQ(reads[s].length, 8192u);
    ASSERT_EQ(reads[s].pieces.size(), 2u);
    EXPECT_EQ(reads[s].pieces[0].buf_offset, s * 4096u);
    EXPECT_EQ(reads[s].pieces[1].buf_offset, g.row_bytes() + s * 4096u);
  }

  // Starting mid-unit in row 0 and ending mid-unit in row 2: shard 1 gets
  // [100, 8192+50) as one read even though it serves three pieces.
  reads = MergeShardPieces(MapChunkRange(g, 4096 + 100, 2 * g.row_bytes() - 50));
  ASSERT_EQ(reads.size(), 4u);
  EXPECT_EQ(reads[1].shard, 1u);
  EXPECT_EQ(reads[1].shard_offset, 100u);
  EXPECT_EQ(reads[1].length, 2 * 4096u - 50);
  EXPECT_EQ(reads[1].pieces.size(), 3u);
}

TEST(MergeShardPiecesTest, NonAdjacentPiecesStaySeparate) {
  std::vector<ShardPiece> in = {
      {2, 8192, 100, 0},
      {2, 0, 4096, 100},     // ends at 4096; next starts at 8192: gap
      {0, 10, 5, 4196},
      {0, 15, 5, 4201},      // touches the previous one
  };
  auto reads = MergeShardPieces(in);
  ASSERT_EQ(reads.size(), 3u);
  EXPECT_EQ(reads[0].shard, 0u);
  EXPECT_EQ(reads[0].shard_offset, 10u);
  EXPECT_EQ(reads[0].length, 10u);
  EXPECT_EQ(reads[1].shard, 2u);
  EXPECT_EQ(reads[1].shard_offset, 0u);
  EXPECT_EQ(reads[1].length, 4096u);
  EXPECT_EQ(reads[2].shard_offset, 8192u);
  CheckMerge(in);
}

TEST(MergeShardPiecesTest, RandomRangesAndShuffledInput) {
  std::mt19937_64 rng(99);
  for (int iter = 0; iter < 600; ++iter) {
    const EcGeometry g = RandomGeometry(rng);
    SCOPED_TRACE("iter " + std::to_string(iter));
    std::vector<ShardPiece> pieces;
    // One to three disjoint ranges of the chunk, so some shards get gaps.
    const int nranges = std::uniform_int_distribution<int>(1, 3)(rng);
    std::vector<uint64_t> cuts;
    for (int i = 0; i < 2 * nranges; ++i) {
      cuts.push_back(RandomPoint(rng, g.chunk_size, g.stripe_unit, g.row_bytes()));
    }
    std::sort(cuts.begin(), cuts.end());
    for (int i = 0; i < nranges; ++i) {
      const uint64_t a = cuts[2 * i], b = cuts[2 * i + 1];
      for (ShardPiece p : MapChunkRange(g, a, b - a)) {
        p.buf_offset += a;  // distinct buffer positions across ranges
        pieces.push_back(p);
      }
    }
    std::shuffle(pieces.begin(), pieces.end(), rng);
    CheckMerge(pieces);
    if (HasFatalFailure()) return;

    // For a single contiguous range the merge is also predictable: every shard
    // touched gets exactly one read (its rows are adjacent in the shard).
    const uint64_t a = cuts.front(), b = cuts.back();
    if (b > a) {
      auto reads = MergeShardPieces(MapChunkRange(g, a, b - a));
      std::vector<int> per_shard(g.k, 0);
      uint64_t total = 0;
      for (const auto& r : reads) {
        ++per_shard[r.shard];
        total += r.length;
      }
      for (uint32_t s = 0; s < g.k; ++s) ASSERT_LE(per_shard[s], 1) << "shard " << s;
      ASSERT_EQ(total, b - a);
    }
  }
}

TEST(RowsOfTest, KnownValues) {
  EcGeometry g{.k = 4, .m = 2, .stripe_unit = 4096, .chunk_size = 4 * 4096 * 8};
  const uint64_t rb = g.row_bytes();
  EXPECT_EQ(RowsOf(g, 0, 1).first, 0u);
  EXPECT_EQ(RowsOf(g, 0, 1).last, 0u);
  EXPECT_EQ(RowsOf(g, 0, rb).last, 0u);
  EXPECT_EQ(RowsOf(g, 0, rb).count(), 1u);
  EXPECT_EQ(RowsOf(g, 0, rb + 1).last, 1u);
  EXPECT_EQ(RowsOf(g, rb - 1, 2).first, 0u);
  EXPECT_EQ(RowsOf(g, rb - 1, 2).last, 1u);
  EXPECT_EQ(RowsOf(g, rb, rb).first, 1u);
  EXPECT_EQ(RowsOf(g, rb, rb).last, 1u);
  EXPECT_EQ(RowsOf(g, 0, g.chunk_size).count(), 8u);
  EXPECT_EQ(RowsOf(g, 3 * rb + 5, 1).first, 3u);
}

TEST(RowsOfTest, MatchesBruteForce) {
  std::mt19937_64 rng(3);
  for (int iter = 0; iter < 300; ++iter) {
    const EcGeometry g = RandomGeometry(rng);
    const uint64_t a = RandomPoint(rng, g.chunk_size - 1, g.stripe_unit, g.row_bytes());
    const uint64_t b = RandomPoint(rng, g.chunk_size, g.stripe_unit, g.row_bytes());
    if (b <= a) continue;
    uint64_t lo = UINT64_MAX, hi = 0;
    // Row of a byte by the definition: data bytes [r*S*K, (r+1)*S*K).
    for (uint64_t x = a; x < b; x += 97) {
      lo = std::min(lo, x / g.row_bytes());
      hi = std::max(hi, x / g.row_bytes());
    }
    lo = std::min(lo, (b - 1) / g.row_bytes());
    hi = std::max(hi, (b - 1) / g.row_bytes());
    const RowRange r = RowsOf(g, a, b - a);
    ASSERT_EQ(r.first, lo) << Describe(g, a, b - a);
    ASSERT_EQ(r.last, hi) << Describe(g, a, b - a);
    // And the pieces agree: every piece lies in a row of the range.
    for (const auto& p : MapChunkRange(g, a, b - a)) {
      const uint64_t row = p.shard_offset / g.stripe_unit;
      ASSERT_GE(row, r.first);
      ASSERT_LE(row, r.last);
    }
  }
}

TEST(RowsForBytesTest, RoundsUp) {
  EcGeometry g{.k = 3, .m = 1, .stripe_unit = 4096, .chunk_size = 3 * 4096 * 4};
  const uint64_t rb = g.row_bytes();
  EXPECT_EQ(RowsForBytes(g, 0), 0u);
  EXPECT_EQ(RowsForBytes(g, 1), 1u);
  EXPECT_EQ(RowsForBytes(g, rb - 1), 1u);
  EXPECT_EQ(RowsForBytes(g, rb), 1u);
  EXPECT_EQ(RowsForBytes(g, rb + 1), 2u);
  EXPECT_EQ(RowsForBytes(g, g.chunk_size), 4u);
  for (uint64_t n = 1; n < 5 * rb; n += 1021) {
    EXPECT_EQ(RowsForBytes(g, n), RowsOf(g, 0, n).count()) << n;
  }
}

TEST(AlignOutTest, LldExample) {
  const AlignedRange r = AlignOut(5'000'000, 4096, 4096);
  EXPECT_EQ(r.offset, 4'997'120u);
  EXPECT_EQ(r.length, 8192u);
}

TEST(AlignOutTest, EdgeCases) {
  AlignedRange r = AlignOut(8192, 4096, 4096);  // already aligned
  EXPECT_EQ(r.offset, 8192u);
  EXPECT_EQ(r.length, 4096u);
  r = AlignOut(8192, 1, 4096);
  EXPECT_EQ(r.offset, 8192u);
  EXPECT_EQ(r.length, 4096u);
  r = AlignOut(8191, 2, 4096);  // two bytes straddling a boundary
  EXPECT_EQ(r.offset, 4096u);
  EXPECT_EQ(r.length, 8192u);
  r = AlignOut(0, 0, 4096);
  EXPECT_EQ(r.offset, 0u);
  EXPECT_EQ(r.length, 0u);
  r = AlignOut(5000, 0, 4096);
  EXPECT_EQ(r.offset, 4096u);
  EXPECT_EQ(r.length, 0u);
  r = AlignOut(12345, 678, 1);  // block 1 changes nothing
  EXPECT_EQ(r.offset, 12345u);
  EXPECT_EQ(r.length, 678u);
  r = AlignOut(1ull << 40, 3, 1 << 20);  // large offsets
  EXPECT_EQ(r.offset, 1ull << 40);
  EXPECT_EQ(r.length, 1u << 20);
}

TEST(AlignOutTest, RandomIsMinimalCover) {
  std::mt19937_64 rng(11);
  for (int iter = 0; iter < 5000; ++iter) {
    const uint64_t block = 1ull << std::uniform_int_distribution<int>(0, 20)(rng);
    const uint64_t off = std::uniform_int_distribution<uint64_t>(0, 1ull << 42)(rng);
    const uint64_t len = std::uniform_int_distribution<uint64_t>(1, 1 << 22)(rng);
    const AlignedRange r = AlignOut(off, len, block);
    const uint64_t end = r.offset + r.length;
    ASSERT_EQ(r.offset % block, 0u);
    ASSERT_EQ(end % block, 0u);
    ASSERT_LE(r.offset, off);
    ASSERT_GE(end, off + len);
    ASSERT_LT(off - r.offset, block);
    ASSERT_LT(end - (off + len), block);
  }
}

TEST(SplitFileRangeTest, KnownSlices) {
  EXPECT_TRUE(SplitFileRange(1 << 20, 777, 0).empty());
  auto s = SplitFileRange(1000, 1500, 2000);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].chunk_index, 1u);
  EXPECT_EQ(s[0].chunk_offset, 500u);
  EXPECT_EQ(s[0].length, 500u);
  EXPECT_EQ(s[0].buf_offset, 0u);
  EXPECT_EQ(s[1].chunk_index, 2u);
  EXPECT_EQ(s[1].chunk_offset, 0u);
  EXPECT_EQ(s[1].length, 1000u);
  EXPECT_EQ(s[1].buf_offset, 500u);
  EXPECT_EQ(s[2].chunk_index, 3u);
  EXPECT_EQ(s[2].chunk_offset, 0u);
  EXPECT_EQ(s[2].length, 500u);
  EXPECT_EQ(s[2].buf_offset, 1500u);

  s = SplitFileRange(4 << 20, 4 << 20, 4 << 20);  // exactly one whole chunk
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].chunk_index, 1u);
  EXPECT_EQ(s[0].chunk_offset, 0u);
  EXPECT_EQ(s[0].length, 4u << 20);
}

TEST(SplitFileRangeTest, ARangePastTheLastOffsetIsCutThere) {
  // The fuzzer's case: an end that wraps. Before, the slice count wrapped
  // too and reserve threw std::length_error.
  const uint64_t off = UINT64_MAX - 1500;
  auto s = SplitFileRange(1000, off, 4000);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].chunk_index, off / 1000);
  EXPECT_EQ(s[0].chunk_offset, off % 1000);
  EXPECT_EQ(s[0].buf_offset, 0u);
  EXPECT_EQ(s[1].chunk_index, off / 1000 + 1);
  EXPECT_EQ(s[1].chunk_offset, 0u);
  EXPECT_EQ(s[1].buf_offset, s[0].length);
  EXPECT_EQ(s[0].length + s[1].length, 1500u);  // up to UINT64_MAX, exclusive
}

TEST(SplitFileRangeTest, MatchesBruteForce) {
  std::mt19937_64 rng(5);
  for (int iter = 0; iter < 1500; ++iter) {
    // Small chunk sizes keep the per-byte check fast while crossing many
    // chunk boundaries; a large base offset checks 64-bit arithmetic.
    const uint64_t cs = std::uniform_int_distribution<uint64_t>(1, 20000)(rng);
    const uint64_t base = (iter % 4 == 0) ? (1ull << 44) : 0;
    uint64_t off = base + std::uniform_int_distribution<uint64_t>(0, 10 * cs)(rng);
    if (iter % 2 == 0) off = (off / cs) * cs + (iter % 3) - 1 + cs;  // near a boundary
    const uint64_t len = std::uniform_int_distribution<uint64_t>(0, std::min<uint64_t>(4 * cs, 60000))(rng);
    SCOPED_TRACE("cs=" + std::to_string(cs) + " off=" + std::to_string(off) +
                 " len=" + std::to_string(len));
    const auto slices = SplitFileRange(cs, off, len);
    std::vector<uint8_t> covered(len, 0);
    uint64_t prev_end = 0;
    for (const ChunkSlice& s : slices) {
      ASSERT_GT(s.length, 0u);
      ASSERT_LE(s.chunk_offset + s.length, cs);
      ASSERT_EQ(s.buf_offset, prev_end);
      prev_end = s.buf_offset + s.length;
      ASSERT_LE(prev_end, len);
      for (uint64_t j = 0; j < s.length; ++j) {
        const uint64_t bo = s.buf_offset + j;
        const uint64_t b = off + bo;  // file byte
        ASSERT_EQ(covered[bo], 0);
        covered[bo] = 1;
        ASSERT_EQ(s.chunk_index, b / cs);
        ASSERT_EQ(s.chunk_offset + j, b % cs);
      }
    }
    for (uint64_t bo = 0; bo < len; ++bo) ASSERT_EQ(covered[bo], 1) << "byte " << bo;
  }
}

// File range -> chunks -> shard pieces, end to end, against the per-byte
// formula applied to file offsets.
TEST(LayoutCompositionTest, FileRangeToShardPieces) {
  std::mt19937_64 rng(17);
  for (int iter = 0; iter < 200; ++iter) {
    const EcGeometry g = RandomGeometry(rng, 3);
    const uint64_t off = RandomPoint(rng, 4 * g.chunk_size, g.stripe_unit, g.chunk_size);
    const uint64_t len =
        std::uniform_int_distribution<uint64_t>(1, std::min<uint64_t>(2 * g.chunk_size, 200000))(rng);
    std::vector<uint8_t> covered(len, 0);
    for (const ChunkSlice& s : SplitFileRange(g.chunk_size, off, len)) {
      for (const ShardPiece& p : MapChunkRange(g, s.chunk_offset, s.length)) {
        for (uint64_t j = 0; j < p.length; ++j) {
          const uint64_t bo = s.buf_offset + p.buf_offset + j;
          const uint64_t b = off + bo;
          const BytePos want = RefLocate(g, b % g.chunk_size);
          ASSERT_EQ(covered[bo], 0);
          covered[bo] = 1;
          ASSERT_EQ(s.chunk_index, b / g.chunk_size);
          ASSERT_EQ(p.shard, want.shard);
          ASSERT_EQ(p.shard_offset + j, want.shard_offset);
        }
      }
    }
    for (uint64_t bo = 0; bo < len; ++bo) ASSERT_EQ(covered[bo], 1);
  }
}

}  // namespace
}  // namespace rustfs::layout
