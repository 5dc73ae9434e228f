#include "ec/crc.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace rustfs::ec {
namespace {

// Textbook bit-at-a-time CRC-32C (reflected polynomial 0x82F63B78, init and
// final xor 0xFFFFFFFF), independent of ISA-L's table and SIMD paths.
uint32_t RefCrc32c(const uint8_t* p, size_t len) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < len; ++i) {
    crc ^= p[i];
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

TEST(Crc32cTest, StandardCheckValue) {
  const char* s = "123456789";
  EXPECT_EQ(Crc32c(s, 9), 0xE3069283u);
  EXPECT_EQ(RefCrc32c(reinterpret_cast<const uint8_t*>(s), 9), 0xE3069283u);
}

TEST(Crc32cTest, EmptyIsZero) {
  EXPECT_EQ(Crc32c(nullptr, 0), 0u);
  const uint8_t b = 0x5a;
  EXPECT_EQ(Crc32c(&b, 0), 0u);
}

// Known vectors from RFC 3720 (iSCSI) appendix B.4.
TEST(Crc32cTest, Rfc3720Vectors) {
  std::vector<uint8_t> buf(32);
  std::memset(buf.data(), 0, buf.size());
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x8A9136AAu);
  std::memset(buf.data(), 0xff, buf.size());
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x113FDB5Cu);
}

TEST(Crc32cTest, MatchesBitwiseReferenceOnRandomBuffers) {
  std::mt19937_64 rng(42);
  std::vector<uint8_t> buf(70000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  // Every length up to 300 exercises the SIMD head/tail handling; then random
  // lengths and misaligned starts.
  for (size_t len = 0; len <= 300; ++len) {
    ASSERT_EQ(Crc32c(buf.data(), len), RefCrc32c(buf.data(), len)) << "len " << len;
  }
  for (int iter = 0; iter < 300; ++iter) {
    const size_t start = std::uniform_int_distribution<size_t>(0, 63)(rng);
    const size_t len = std::uniform_int_distribution<size_t>(0, buf.size() - start)(rng);
    ASSERT_EQ(Crc32c(buf.data() + start, len), RefCrc32c(buf.data() + start, len))
        << "start " << start << " len " << len;
  }
}

TEST(Crc32cTest, DetectsSingleBitFlip) {
  std::vector<uint8_t> buf(4096, 0x33);
  const uint32_t base = Crc32c(buf.data(), buf.size());
  for (size_t bit = 0; bit < buf.size() * 8; bit += 997) {
    buf[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_NE(Crc32c(buf.data(), buf.size()), base) << "bit " << bit;
    buf[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
}

}  // namespace
}  // namespace rustfs::ec
