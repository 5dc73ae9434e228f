#include "common/units.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

namespace rustfs {
namespace {

constexpr uint64_t kTiB = 1024 * kGiB;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

uint64_t ParseOk(std::string_view text) {
  Result<uint64_t> r = ParseByteSize(text);
  EXPECT_TRUE(r.has_value()) << text << ": " << r.error().ToString();
  return r.value_or(0);
}

void ExpectRefused(std::string_view text) {
  Result<uint64_t> r = ParseByteSize(text);
  ASSERT_FALSE(r.has_value()) << "accepted \"" << text << "\" as " << *r;
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  // The message must let the user find the bad text in their file.
  EXPECT_NE(r.error().message().find("\"" + std::string(text) + "\""), std::string::npos)
      << r.error().message();
}

TEST(ParseByteSize, PlainIntegerIsBytes) {
  EXPECT_EQ(ParseOk("0"), 0u);
  EXPECT_EQ(ParseOk("1"), 1u);
  EXPECT_EQ(ParseOk("65536"), 65536u);
  EXPECT_EQ(ParseOk("18446744073709551615"), kMax);
}

TEST(ParseByteSize, EachBinaryUnit) {
  EXPECT_EQ(ParseOk("7B"), 7u);
  EXPECT_EQ(ParseOk("64KiB"), 64 * kKiB);
  EXPECT_EQ(ParseOk("4MiB"), 4 * kMiB);
  EXPECT_EQ(ParseOk("8GiB"), 8 * kGiB);
  EXPECT_EQ(ParseOk("2TiB"), 2 * kTiB);
  EXPECT_EQ(ParseOk("0KiB"), 0u);
}

TEST(ParseByteSize, OneSpaceBeforeUnitAllowed) {
  EXPECT_EQ(ParseOk("64 KiB"), 64 * kKiB);
  EXPECT_EQ(ParseOk("32 GiB"), 32 * kGiB);
  EXPECT_EQ(ParseOk("5 B"), 5u);
}

TEST(ParseByteSize, RefusesDecimalAndAbbreviatedUnits) {
  for (const char* text : {"64KB", "1GB", "1MB", "1TB", "1k", "1K", "1M", "1G", "64kb",
                           "64kib", "64KIB", "64Kib", "1KiBs", "1 KiB ", "1Bytes"}) {
    SCOPED_TRACE(text);
    ExpectRefused(text);
  }
}

TEST(ParseByteSize, DecimalUnitMessageSuggestsBinaryUnit) {
  Result<uint64_t> r = ParseByteSize("64KB");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("KiB"), std::string::npos) << r.error().message();
}

TEST(ParseByteSize, RefusesFractionsSignsAndEmpty) {
  for (const char* text : {"", "1.5MiB", "1.0", "0.5", "-1", "-64KiB", "+1", "+64KiB",
                           "KiB", "B", " 64", "64 ", "64  KiB", "\t64", "0x10", "1e6",
                           "1_000", "64\tKiB"}) {
    SCOPED_TRACE(text);
    ExpectRefused(text);
  }
}

TEST(ParseByteSize, RefusesOverflow) {
  ExpectRefused("18446744073709551616");
  ExpectRefused("99999999999999999999999");
  ExpectRefused("16777216TiB");  // exactly 2^64
  ExpectRefused("17179869184GiB");
  ExpectRefused("18446744073709551615KiB");
  EXPECT_EQ(ParseOk("16777215TiB"), 16777215 * kTiB);
}

TEST(FormatByteSize, UsesLargestExactUnit) {
  EXPECT_EQ(FormatByteSize(0), "0B");
  EXPECT_EQ(FormatByteSize(1), "1B");
  EXPECT_EQ(FormatByteSize(1000), "1000B");
  EXPECT_EQ(FormatByteSize(1536), "1536B");
  EXPECT_EQ(FormatByteSize(1024), "1KiB");
  EXPECT_EQ(FormatByteSize(65536), "64KiB");
  EXPECT_EQ(FormatByteSize(1536 * kKiB), "1536KiB");
  EXPECT_EQ(FormatByteSize(4 * kMiB), "4MiB");
  EXPECT_EQ(FormatByteSize(8 * kGiB), "8GiB");
  EXPECT_EQ(FormatByteSize(kTiB), "1TiB");
  EXPECT_EQ(FormatByteSize(2048 * kTiB), "2048TiB");
  EXPECT_EQ(FormatByteSize(kMax), "18446744073709551615B");
}

TEST(ByteSizeRoundTrip, BoundaryValues) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, kKiB - 1, kKiB, kKiB + 1, kMiB, kGiB, kTiB,
                     kMax, kMax - 1, kMax / kTiB * kTiB}) {
    EXPECT_EQ(ParseOk(FormatByteSize(v)), v) << v;
  }
}

// Random values with many trailing zero bits, so every unit gets exercised,
// plus fully random ones that mostly format as plain bytes.
TEST(ByteSizeRoundTrip, RandomValuesFormatThenParse) {
  std::mt19937_64 rng(20240521);
  for (int i = 0; i < 20000; ++i) {
    uint64_t v = rng();
    if (i % 2 == 0) {
      const int shift = static_cast<int>(rng() % 64);
      v = (v >> shift) << shift;
    }
    const std::string text = FormatByteSize(v);
    ASSERT_EQ(ParseOk(text), v) << text;
  }
}

TEST(ByteSizeRoundTrip, RandomTextParseThenFormat) {
  struct Unit {
    const char* name;
    uint64_t bytes;
  };
  const std::array<Unit, 5> units = {
      {{"B", 1}, {"KiB", kKiB}, {"MiB", kMiB}, {"GiB", kGiB}, {"TiB", kTiB}}};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const Unit& unit = units[rng() % units.size()];
    const uint64_t limit = kMax / unit.bytes;  // largest n that does not overflow
    const uint64_t n = (limit == kMax) ? rng() : rng() % (limit + 1);
    const std::string sep = (rng() % 2) ? " " : "";
    const std::string text = std::to_string(n) + sep + unit.name;
    const uint64_t bytes = ParseOk(text);
    ASSERT_EQ(bytes, n * unit.bytes) << text;
    ASSERT_EQ(ParseOk(FormatByteSize(bytes)), bytes) << text;
  }
}

}  // namespace
}  // namespace rustfs
