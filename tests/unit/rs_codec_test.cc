// The parity check uses a GF(2^8) and a Cauchy matrix built here from their
// definitions, not ISA-L's. A bug in how the codec drives ISA-L (wrong matrix
// rows, wrong tables) then shows up even though ISA-L itself is trusted for the
// fast paths.
#include "ec/rs_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace rustfs::ec {
namespace {

// GF(2^8) with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d), as ISA-L uses.
uint8_t GfMul(uint8_t a, uint8_t b) {
  uint8_t p = 0;
  while (b) {
    if (b & 1) p ^= a;
    const bool carry = a & 0x80;
    a = static_cast<uint8_t>(a << 1);
    if (carry) a ^= 0x1d;
    b >>= 1;
  }
  return p;
}

uint8_t GfInv(uint8_t a) {
  for (int b = 1; b < 256; ++b) {
    if (GfMul(a, static_cast<uint8_t>(b)) == 1) return static_cast<uint8_t>(b);
  }
  ADD_FAILURE() << "no inverse for " << int{a};
  return 0;
}

// Parity row i (k <= i < k+m), column j (< k) of the Cauchy generator:
// 1 / (i xor j). i != j always, so the denominator is never zero.
std::vector<uint8_t> RefCauchyParityRows(uint32_t k, uint32_t m) {
  std::vector<uint8_t> rows(m * k);
  for (uint32_t i = 0; i < m; ++i) {
    for (uint32_t j = 0; j < k; ++j) rows[i * k + j] = GfInv(static_cast<uint8_t>((k + i) ^ j));
  }
  return rows;
}

struct Stripe {
  uint32_t k, m;
  size_t len;
  std::vector<std::vector<uint8_t>> shards;  // k + m, each len bytes

  std::vector<const uint8_t*> DataPtrs() const {
    std::vector<const uint8_t*> p;
    for (uint32_t i = 0; i < k; ++i) p.push_back(shards[i].data());
    return p;
  }
  std::vector<uint8_t*> ParityPtrs() {
    std::vector<uint8_t*> p;
    for (uint32_t i = 0; i < m; ++i) p.push_back(shards[k + i].data());
    return p;
  }
};

Stripe MakeEncodedStripe(const RsCodec& codec, size_t len, uint64_t seed) {
  Stripe s{codec.k(), codec.m(), len, {}};
  std::mt19937_64 rng(seed);
  s.shards.assign(s.k + s.m, std::vector<uint8_t>(len));
  for (uint32_t i = 0; i < s.k; ++i) {
    for (auto& b : s.shards[i]) b = static_cast<uint8_t>(rng());
  }
  // Parity buffers start as garbage so a no-op encode cannot pass.
  for (uint32_t i = s.k; i < s.k + s.m; ++i) {
    for (auto& b : s.shards[i]) b = static_cast<uint8_t>(rng());
  }
  auto data = s.DataPtrs();
  auto parity = s.ParityPtrs();
  codec.Encode(data, parity, len);
  return s;
}

std::shared_ptr<RsCodec> MustCreate(uint32_t k, uint32_t m) {
  auto r = RsCodec::Create(k, m);
  EXPECT_TRUE(r.has_value()) << "k=" << k << " m=" << m;
  return r.has_value() ? *r : nullptr;
}

// Loses the shards in `lost`, reconstructs them (in `want_order`), and checks
// each against the original byte for byte.
void CheckReconstruct(const RsCodec& codec, const Stripe& s, const std::vector<uint32_t>& lost,
                      const std::vector<uint32_t>& want) {
  std::vector<const uint8_t*> avail(s.k + s.m);
  for (uint32_t i = 0; i < s.k + s.m; ++i) avail[i] = s.shards[i].data();
  for (uint32_t i : lost) avail[i] = nullptr;
  std::vector<std::vector<uint8_t>> out(want.size(), std::vector<uint8_t>(s.len, 0xEE));
  std::vector<uint8_t*> outp;
  for (auto& o : out) outp.push_back(o.data());
  const Status st = codec.Reconstruct(avail, want, outp, s.len);
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(out[i] == s.shards[want[i]]) << "shard " << want[i] << " differs";
  }
}

std::string PatternName(const std::vector<uint32_t>& lost) {
  std::string r = "lost {";
  for (uint32_t i : lost) r += std::to_string(i) + ",";
  return r + "}";
}

// Calls fn(subset) for every subset of {0..n-1} with 1..max_size elements.
template <class Fn>
void ForEachSubset(uint32_t n, uint32_t max_size, Fn fn) {
  for (uint64_t mask = 1; mask < (uint64_t{1} << n); ++mask) {
    if (static_cast<uint32_t>(__builtin_popcountll(mask)) > max_size) continue;
    std::vector<uint32_t> subset;
    for (uint32_t i = 0; i < n; ++i) {
      if (mask & (uint64_t{1} << i)) subset.push_back(i);
    }
    fn(subset);
  }
}

struct Geometry {
  uint32_t k, m;
};
const Geometry kGeometries[] = {{4, 2}, {2, 1}, {6, 3}, {10, 4}, {1, 0}, {3, 0},
                                {1, 2}, {8, 4}, {12, 4}, {5, 5}};

TEST(RsCodecTest, CreateValidatesGeometry) {
  EXPECT_FALSE(RsCodec::Create(0, 2).has_value());
  EXPECT_FALSE(RsCodec::Create(0, 0).has_value());
  EXPECT_FALSE(RsCodec::Create(30, 3).has_value());
  EXPECT_FALSE(RsCodec::Create(1, 32).has_value());
  EXPECT_FALSE(RsCodec::Create(1, UINT32_MAX).has_value());  // k + m must not wrap
  EXPECT_EQ(RsCodec::Create(0, 2).error().code(), Code::kInvalidArgument);
  auto c = RsCodec::Create(28, 4);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ((*c)->k(), 28u);
  EXPECT_EQ((*c)->m(), 4u);
  EXPECT_TRUE(RsCodec::Create(32, 0).has_value());
  EXPECT_TRUE(RsCodec::Create(1, 31).has_value());
}

// Parity equals XOR_j C[i][j] * data_j with C the Cauchy matrix built above.
TEST(RsCodecTest, ParityMatchesIndependentCauchyReference) {
  for (const Geometry& geo : kGeometries) {
    SCOPED_TRACE("k=" + std::to_string(geo.k) + " m=" + std::to_string(geo.m));
    auto codec = MustCreate(geo.k, geo.m);
    ASSERT_TRUE(codec);
    const auto c = RefCauchyParityRows(geo.k, geo.m);
    for (size_t len : {size_t{1}, size_t{7}, size_t{33}, size_t{4097}}) {
      const Stripe s = MakeEncodedStripe(*codec, len, len * 131 + geo.k);
      for (uint32_t i = 0; i < geo.m; ++i) {
        for (size_t b = 0; b < len; ++b) {
          uint8_t want = 0;
          for (uint32_t j = 0; j < geo.k; ++j) want ^= GfMul(c[i * geo.k + j], s.shards[j][b]);
          ASSERT_EQ(s.shards[geo.k + i][b], want) << "parity " << i << " byte " << b;
        }
      }
    }
  }
}

TEST(RsCodecTest, ReferenceGfSanity) {
  // Spot checks of the test's own field so the reference itself is trusted:
  // x * x^7 = x^8 = x^4 + x^3 + x^2 + 1 under 0x11d.
  EXPECT_EQ(GfMul(2, 0x80), 0x1d);
  EXPECT_EQ(GfMul(1, 0xab), 0xab);
  EXPECT_EQ(GfMul(0, 0xab), 0);
  for (int a = 1; a < 256; ++a) {
    ASSERT_EQ(GfMul(static_cast<uint8_t>(a), GfInv(static_cast<uint8_t>(a))), 1) << a;
  }
}

TEST(RsCodecTest, ReconstructsEveryErasurePattern) {
  for (const Geometry& geo : kGeometries) {
    auto codec = MustCreate(geo.k, geo.m);
    ASSERT_TRUE(codec);
    for (size_t len : {size_t{1}, size_t{7}, size_t{4097}}) {
      SCOPED_TRACE("k=" + std::to_string(geo.k) + " m=" + std::to_string(geo.m) +
                   " len=" + std::to_string(len));
      const Stripe s = MakeEncodedStripe(*codec, len, 1000 + len + geo.k * 7 + geo.m);
      int patterns = 0;
      ForEachSubset(geo.k + geo.m, geo.m, [&](const std::vector<uint32_t>& lost) {
        SCOPED_TRACE(PatternName(lost));
        ++patterns;
        CheckReconstruct(*codec, s, lost, lost);
        // Reversed order must map outputs correctly even though the decode
        // tables for this set are cached in ascending order.
        std::vector<uint32_t> rev(lost.rbegin(), lost.rend());
        CheckReconstruct(*codec, s, lost, rev);
        // Only the last lost shard wanted: the rest stay missing.
        CheckReconstruct(*codec, s, lost, {lost.back()});
      });
      if (HasFatalFailure()) return;
      if (geo.m == 0) {
        EXPECT_EQ(patterns, 0);
      }
    }
  }
}

TEST(RsCodecTest, WidestGeometry) {
  auto codec = MustCreate(28, 4);
  ASSERT_TRUE(codec);
  const Stripe s = MakeEncodedStripe(*codec, 1000, 5);
  CheckReconstruct(*codec, s, {0, 13, 27, 31}, {31, 0, 27, 13});
  CheckReconstruct(*codec, s, {28, 29, 30, 31}, {28, 29, 30, 31});
  CheckReconstruct(*codec, s, {1, 2, 3, 4}, {4, 1});
}

TEST(RsCodecTest, LargeBufferRoundTrip) {
  auto codec = MustCreate(6, 3);
  ASSERT_TRUE(codec);
  const Stripe s = MakeEncodedStripe(*codec, (1 << 20) + 3, 77);
  CheckReconstruct(*codec, s, {0, 4, 7}, {0, 4, 7});
}

TEST(RsCodecTest, ZeroLength) {
  auto codec = MustCreate(4, 2);
  ASSERT_TRUE(codec);
  std::vector<const uint8_t*> data(4, nullptr);
  std::vector<uint8_t*> parity(2, nullptr);
  codec->Encode(data, parity, 0);  // must not touch the (null) buffers

  uint8_t dummy = 0;
  std::vector<const uint8_t*> shards = {&dummy, nullptr, &dummy, &dummy, nullptr, &dummy};
  std::vector<uint32_t> want = {1, 4};
  std::vector<uint8_t*> out = {&dummy, &dummy};
  EXPECT_TRUE(codec->Reconstruct(shards, want, out, 0).ok());
  EXPECT_EQ(dummy, 0);
  // Validation still applies at length 0.
  shards[3] = nullptr;
  EXPECT_FALSE(codec->Reconstruct(shards, want, out, 0).ok());
}

TEST(RsCodecTest, NoParityEncodeIsNoop) {
  auto codec = MustCreate(3, 0);
  ASSERT_TRUE(codec);
  const Stripe s = MakeEncodedStripe(*codec, 100, 1);
  std::vector<const uint8_t*> shards = {s.shards[0].data(), s.shards[1].data(), s.shards[2].data()};
  EXPECT_TRUE(codec->Reconstruct(shards, {}, {}, 100).ok());
}

TEST(RsCodecTest, Errors) {
  auto codec = MustCreate(4, 2);
  ASSERT_TRUE(codec);
  const size_t len = 64;
  const Stripe s = MakeEncodedStripe(*codec, len, 9);
  std::vector<const uint8_t*> shards(6);
  for (int i = 0; i < 6; ++i) shards[i] = s.shards[i].data();
  std::vector<uint8_t> buf(len), buf2(len);
  std::vector<uint8_t*> out1 = {buf.data()};

  // Fewer than k available.
  auto three_lost = shards;
  three_lost[0] = three_lost[2] = three_lost[5] = nullptr;
  std::vector<uint32_t> want0 = {0};
  Status st = codec->Reconstruct(three_lost, want0, out1, len);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kUnavailable);

  auto one_lost = shards;
  one_lost[1] = nullptr;
  // Wanted index out of range.
  std::vector<uint32_t> want6 = {6};
  st = codec->Reconstruct(one_lost, want6, out1, len);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  // Wanted index present, not missing.
  std::vector<uint32_t> want2 = {2};
  st = codec->Reconstruct(one_lost, want2, out1, len);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  // Duplicate wanted index.
  auto two_lost = one_lost;
  two_lost[4] = nullptr;
  std::vector<uint32_t> dup = {1, 1};
  std::vector<uint8_t*> out2 = {buf.data(), buf2.data()};
  st = codec->Reconstruct(two_lost, dup, out2, len);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  // Mismatched spans.
  std::vector<uint32_t> want1 = {1};
  st = codec->Reconstruct(std::span(one_lost).first(5), want1, out1, len);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  st = codec->Reconstruct(one_lost, want1, out2, len);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  std::vector<uint8_t*> null_out = {nullptr};
  st = codec->Reconstruct(one_lost, want1, null_out, len);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);

  // After all the failures the codec still works.
  st = codec->Reconstruct(one_lost, want1, out1, len);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(buf == s.shards[1]);
}

// Many threads on one codec, each cycling through its own erasure patterns
// (and some shared ones), so cache misses, inserts and hits race.
TEST(RsCodecTest, ConcurrentReconstruct) {
  auto codec = MustCreate(6, 3);
  ASSERT_TRUE(codec);
  const size_t len = 8192 + 5;
  const Stripe s = MakeEncodedStripe(*codec, len, 2024);

  std::vector<std::vector<uint32_t>> patterns;
  ForEachSubset(9, 3, [&](const std::vector<uint32_t>& lost) { patterns.push_back(lost); });

  constexpr int kThreads = 8;
  constexpr int kIters = 1000;
  std::atomic<int> failures{0};
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<uint8_t> out_buf[3];
      for (auto& o : out_buf) o.resize(len);
      for (int iter = 0; iter < kIters; ++iter) {
        // Half the time a pattern only this thread uses at this step, half
        // the time one every thread hits at once.
        const auto& lost = (iter % 2 == 0) ? patterns[(iter * kThreads + t) % patterns.size()]
                                           : patterns[iter % patterns.size()];
        std::vector<const uint8_t*> avail(9);
        for (int i = 0; i < 9; ++i) avail[i] = s.shards[i].data();
        for (uint32_t i : lost) avail[i] = nullptr;
        std::vector<uint32_t> want = lost;
        std::shuffle(want.begin(), want.end(), rng);
        std::vector<uint8_t*> outp;
        for (size_t i = 0; i < want.size(); ++i) outp.push_back(out_buf[i].data());
        if (!codec->Reconstruct(avail, want, outp, len).ok()) {
          ++failures;
          continue;
        }
        for (size_t i = 0; i < want.size(); ++i) {
          if (!std::equal(out_buf[i].begin(), out_buf[i].end(), s.shards[want[i]].begin())) {
            ++failures;
          }
        }
        ++done;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(done.load(), kThreads * kIters);
}

// Encode is const and shares its tables: concurrent encodes must agree.
TEST(RsCodecTest, ConcurrentEncode) {
  auto codec = MustCreate(10, 4);
  ASSERT_TRUE(codec);
  const Stripe ref = MakeEncodedStripe(*codec, 3000, 8);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int iter = 0; iter < 100; ++iter) {
        std::vector<std::vector<uint8_t>> parity(4, std::vector<uint8_t>(3000));
        std::vector<uint8_t*> pp;
        for (auto& p : parity) pp.push_back(p.data());
        auto data = ref.DataPtrs();
        codec->Encode(data, pp, 3000);
        for (int i = 0; i < 4; ++i) {
          if (parity[i] != ref.shards[10 + i]) ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace rustfs::ec
