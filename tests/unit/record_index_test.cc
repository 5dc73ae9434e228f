// Record indexes: both formats parsed against records laid out
// independently here, malformed ones refused, and the catalog's matching of
// a data file to the index that describes it.
#include "client/record_index.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

namespace rustfs::client {
namespace {

// n records of random sizes, back to back from `start`.
std::vector<PlanEntry> Layout(size_t n, uint64_t start, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<PlanEntry> v;
  uint64_t off = start;
  for (size_t i = 0; i < n; i++) {
    const uint64_t len = 100 + rng() % 70000;
    v.push_back({off, len});
    off += len;
  }
  return v;
}

std::string DaliText(const std::vector<PlanEntry>& v) {
  std::string s;
  for (const auto& e : v) s += std::to_string(e.offset) + " " + std::to_string(e.length) + "\n";
  return s;
}

std::string Binary(const std::vector<PlanEntry>& v) {
  std::string s(kRecordIndexMagic);
  const uint64_t n = v.size();
  s.append(reinterpret_cast<const char*>(&n), 8);
  for (const auto& e : v) {
    s.append(reinterpret_cast<const char*>(&e.offset), 8);
    s.append(reinterpret_cast<const char*>(&e.length), 8);
  }
  return s;
}

void ExpectSame(const std::vector<PlanEntry>& got, const std::vector<PlanEntry>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); i++) {
    EXPECT_EQ(got[i].offset, want[i].offset) << i;
    EXPECT_EQ(got[i].length, want[i].length) << i;
  }
}

TEST(RecordIndexTest, DaliTextParses) {
  auto want = Layout(1000, 0, 1);
  const std::string text = DaliText(want);
  EXPECT_TRUE(LooksLikeRecordIndex(text.substr(0, 4096)));
  auto got = ParseRecordIndex(text);
  ASSERT_TRUE(got.has_value()) << got.error().ToString();
  ExpectSame(*got, want);
  // Tabs, CRLF, blank lines and no final newline are all DALI's writers'.
  auto crlf = ParseRecordIndex("0\t10\r\n\n10  5\r\n20 1");
  ASSERT_TRUE(crlf.has_value());
  ExpectSame(*crlf, {{0, 10}, {10, 5}, {20, 1}});
}

TEST(RecordIndexTest, BinaryParses) {
  auto want = Layout(5000, 64, 2);  // after a 64-byte header
  const std::string bin = Binary(want);
  EXPECT_TRUE(LooksLikeRecordIndex(bin.substr(0, 4096)));
  auto got = ParseRecordIndex(bin);
  ASSERT_TRUE(got.has_value()) << got.error().ToString();
  ExpectSame(*got, want);
}

TEST(RecordIndexTest, OtherFilesAreNotIndexes) {
  EXPECT_FALSE(LooksLikeRecordIndex(""));
  EXPECT_FALSE(LooksLikeRecordIndex("hello world\n"));
  EXPECT_FALSE(LooksLikeRecordIndex("12 34 56\n"));  // three fields
  EXPECT_FALSE(LooksLikeRecordIndex("1234"));        // no line end seen
  EXPECT_FALSE(LooksLikeRecordIndex(std::string("\x00\x01\x02\x03", 4)));
  EXPECT_TRUE(LooksLikeRecordIndex("0 1234\n"));
  // A log of numbers passes the look, and fails the parse.
  for (const char* bad : {"0 10\n5 10\n",            // overlapping
                          "0 10\n20 0\n",            // empty record
                          "10 10\n0 5\n",            // unsorted
                          "0 10\nx 5\n", "0 10 7\n", "\n\n",
                          "18446744073709551615 2\n"})  // past 2^64
    EXPECT_FALSE(ParseRecordIndex(bad).has_value()) << bad;
  std::string truncated = Binary(Layout(10, 0, 3));
  truncated.pop_back();
  EXPECT_FALSE(ParseRecordIndex(truncated).has_value());
  std::string huge_count(kRecordIndexMagic);
  const uint64_t n = UINT64_MAX / 8;
  huge_count.append(reinterpret_cast<const char*>(&n), 8);
  EXPECT_FALSE(ParseRecordIndex(huge_count).has_value());
}

TEST(RecordIndexTest, CatalogMatchesTheFileTheIndexDescribes) {
  IndexCatalog cat;
  EXPECT_EQ(cat.Match(5, 1000, 0, 10), nullptr);
  auto a = Layout(100, 0, 4), b = Layout(50, 4096, 5);
  const uint64_t a_end = a.back().offset + a.back().length, b_end = b.back().offset + b.back().length;
  cat.Add(1, a);
  cat.Add(2, b);
  // A read inside a listed record of a file of exactly the index's size.
  auto m = cat.Match(7, a_end, a[40].offset + 3, 4096);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->index_ino, 1u);
  EXPECT_EQ(cat.Match(7, b_end, b[10].offset, 100)->index_ino, 2u);
  // Another size, a read in b's header (before its first record), or the
  // index file itself: no.
  EXPECT_EQ(cat.Match(7, a_end + 1, a[40].offset, 10), nullptr);
  EXPECT_EQ(cat.Match(7, b_end, 100, 10), nullptr);
  EXPECT_EQ(cat.Match(1, a_end, a[40].offset, 10), nullptr);
  // Re-reading an index replaces what it said.
  cat.Add(1, Layout(10, 0, 6));
  EXPECT_EQ(cat.Match(7, a_end, a[40].offset, 10), nullptr);
}

TEST(RecordIndexTest, CatalogKeepsTheNewest) {
  IndexCatalog cat;
  for (uint64_t i = 0; i < IndexCatalog::kMaxIndexes + 1; i++) cat.Add(100 + i, {{0, 1000 + i}});
  EXPECT_EQ(cat.Match(1, 1000, 0, 1), nullptr);  // the first, dropped
  EXPECT_NE(cat.Match(1, 1001, 0, 1), nullptr);
}

}  // namespace
}  // namespace rustfs::client
