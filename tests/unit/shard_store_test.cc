// ShardStore is checked against an in-memory reference image of each shard:
// every read (aligned or not) must return exactly the reference bytes, bytes
// never written read as zeros, a flipped byte on disk is reported as
// corruption instead of being returned, and everything survives reopening.
#include "dss/shard_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "common/metrics.h"

namespace rustfs::dss {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kBlock = ShardStore::kBlock;

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

class ShardStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shard_store_test.XXXXXX";
    char* d = ::mkdtemp(tmpl);
    ASSERT_NE(d, nullptr);
    dir_ = d;
    auto s = ShardStore::Open(dir_);
    ASSERT_TRUE(s.has_value()) << s.error().ToString();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Reads [off, off+len) and expects it to equal ref's bytes (ref is the
  // whole shard image, zero-padded to capacity).
  void ExpectRange(const ShardId& id, const std::string& ref, uint64_t off, uint64_t len) {
    std::string out = "garbage";
    Status st = store_->Read(id, off, len, out);
    ASSERT_TRUE(st.ok()) << st.ToString() << " off=" << off << " len=" << len;
    ASSERT_EQ(out.size(), len);
    ASSERT_TRUE(out == ref.substr(off, len)) << "content mismatch off=" << off << " len=" << len;
  }

  void Reopen(std::unique_ptr<RandomReadEngine> engine = nullptr) {
    store_.reset();
    auto s = ShardStore::Open(dir_, std::move(engine));
    ASSERT_TRUE(s.has_value()) << s.error().ToString();
    store_ = std::move(*s);
  }

  // Flips one byte of the shard's data on disk, `pos` bytes into the shard.
  void FlipByteOnDisk(const ShardId& id, uint64_t pos) {
    auto where = store_->Locate(id);
    ASSERT_TRUE(where.has_value());
    const std::string& path = where->first;
    pos += where->second;
    int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << path;
    char c;
    ASSERT_EQ(::pread(fd, &c, 1, static_cast<off_t>(pos)), 1);
    c ^= 0x5a;
    ASSERT_EQ(::pwrite(fd, &c, 1, static_cast<off_t>(pos)), 1);
    ::close(fd);
  }

  std::string dir_;
  std::unique_ptr<ShardStore> store_;
};

TEST_F(ShardStoreTest, WriteReadRoundTrip) {
  std::mt19937_64 rng(1);
  const uint64_t cap = 1 * kMiB;
  const ShardId id{7, 3, 1, 2};
  std::string data = RandomBytes(rng, cap);
  ASSERT_TRUE(store_->Write(id, 0, 0, data, cap).ok());
  std::string out;
  ASSERT_TRUE(store_->Read(id, 0, cap, out).ok());
  ASSERT_EQ(out.size(), cap);
  EXPECT_TRUE(out == data);
  // The bytes really are where Locate says: in a data file, at a slot
  // boundary, nothing before them.
  auto where = store_->Locate(id);
  ASSERT_TRUE(where.has_value());
  EXPECT_EQ(where->second % cap, 0u);
  int fd = ::open(where->first.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::string head(64, '\0');
  ASSERT_EQ(::pread(fd, head.data(), head.size(), static_cast<off_t>(where->second)), 64);
  ::close(fd);
  EXPECT_TRUE(head == data.substr(0, 64));
}

TEST_F(ShardStoreTest, RandomUnalignedReadsMatchReference) {
  std::mt19937_64 rng(2);
  const uint64_t cap = 1 * kMiB;
  const uint64_t written = 600 * kKiB;  // the rest of capacity stays unwritten
  const ShardId id{11, 0, 5, 0};
  std::string ref = RandomBytes(rng, written);
  ASSERT_TRUE(store_->Write(id, 0, 0, ref, cap).ok());
  ref.resize(cap, '\0');
  for (int i = 0; i < 1500; i++) {
    uint64_t off = std::uniform_int_distribution<uint64_t>(0, cap)(rng);
    uint64_t max_len = cap - off;
    // Mostly short reads (crossing a block or two), sometimes long ones.
    uint64_t len = (i % 4 == 0) ? std::uniform_int_distribution<uint64_t>(0, max_len)(rng)
                                : std::uniform_int_distribution<uint64_t>(
                                      0, std::min<uint64_t>(max_len, 3 * kBlock))(rng);
    ExpectRange(id, ref, off, len);
    if (HasFatalFailure()) return;
  }
  // Edges: block boundaries and the written/unwritten boundary.
  for (uint64_t off : {uint64_t{0}, kBlock - 1, kBlock, kBlock + 1, written - 1, written,
                       written + 1, cap - 1, cap}) {
    for (uint64_t len : {uint64_t{0}, uint64_t{1}, uint64_t{2}, kBlock, kBlock + 1}) {
      if (off + len > cap) continue;
      ExpectRange(id, ref, off, len);
      if (HasFatalFailure()) return;
    }
  }
}

TEST_F(ShardStoreTest, BytesPastWrittenLengthReadAsZeros) {
  std::mt19937_64 rng(3);
  const uint64_t cap = 256 * kKiB;
  const ShardId id{1, 1, 1, 1};
  std::string data = RandomBytes(rng, 8 * kBlock);
  ASSERT_TRUE(store_->Write(id, 0, 0, data, cap).ok());
  std::string out;
  ASSERT_TRUE(store_->Read(id, 8 * kBlock, cap - 8 * kBlock, out).ok());
  EXPECT_EQ(out, std::string(cap - 8 * kBlock, '\0'));
  // A read straddling the end of data: data then zeros.
  ASSERT_TRUE(store_->Read(id, 8 * kBlock - 10, 30, out).ok());
  EXPECT_EQ(out, data.substr(8 * kBlock - 10) + std::string(20, '\0'));
  // Reading past capacity is refused.
  EXPECT_EQ(store_->Read(id, cap - 10, 11, out).code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Read(id, UINT64_MAX, 2, out).code(), Code::kInvalidArgument);
}

TEST_F(ShardStoreTest, UnalignedWritesRefused) {
  const uint64_t cap = 64 * kKiB;
  const ShardId id{2, 0, 1, 0};
  std::string block(kBlock, 'x');
  EXPECT_EQ(store_->Write(id, 0, 1, block, cap).code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Write(id, 0, 512, block, cap).code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Write(id, 0, 0, std::string(kBlock + 1, 'x'), cap).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(store_->Write(id, 0, 0, std::string(100, 'x'), cap).code(), Code::kInvalidArgument);
  // Nothing was created.
  std::string out;
  EXPECT_EQ(store_->Read(id, 0, 1, out).code(), Code::kNotFound);
}

TEST_F(ShardStoreTest, WritePastCapacityRefused) {
  const uint64_t cap = 64 * kKiB;
  const ShardId id{3, 0, 1, 0};
  EXPECT_EQ(store_->Write(id, 0, 0, std::string(cap + kBlock, 'x'), cap).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(store_->Write(id, 0, cap, std::string(kBlock, 'x'), cap).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(store_->Write(id, 0, 0, std::string(kBlock, 'x'), 0).code(), Code::kInvalidArgument);
  // Capacities that are no multiple of a block or beyond any chunk, and an
  // offset near 2^64, are refused before anything is allocated.
  EXPECT_EQ(store_->Write(id, 0, 0, std::string(kBlock, 'x'), cap + 1).code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Write(id, 0, 0, std::string(kBlock, 'x'), 64ull << 30).code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Write(id, 0, UINT64_MAX - kBlock + 1, std::string(kBlock, 'x'), cap).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(store_->ShardCount(), 0u);
  // Exactly filling capacity is fine.
  EXPECT_TRUE(store_->Write(id, 0, 0, std::string(cap, 'y'), cap).ok());
  std::string out;
  ASSERT_TRUE(store_->Read(id, 0, cap, out).ok());
  EXPECT_EQ(out, std::string(cap, 'y'));
}

TEST_F(ShardStoreTest, CloneFromBaseVersion) {
  std::mt19937_64 rng(4);
  const uint64_t cap = 1 * kMiB;
  ShardId v1{9, 4, 1, 3};
  ShardId v2 = v1;
  v2.version = 2;
  std::string d1 = RandomBytes(rng, cap);
  ASSERT_TRUE(store_->Write(v1, 0, 0, d1, cap).ok());
  // Read v1 first: a version being read is cloned all the same.
  std::string out;
  ASSERT_TRUE(store_->Read(v1, 0, 10, out).ok());

  const uint64_t off = 100 * kBlock, len = 30 * kBlock;
  std::string change = RandomBytes(rng, len);
  ASSERT_TRUE(store_->Write(v2, 1, off, change, cap).ok());

  std::string expect2 = d1;
  expect2.replace(off, len, change);
  ASSERT_TRUE(store_->Read(v2, 0, cap, out).ok());
  EXPECT_TRUE(out == expect2);
  ASSERT_TRUE(store_->Read(v1, 0, cap, out).ok());
  EXPECT_TRUE(out == d1);
  // Unaligned reads of v2 around the changed range.
  for (int i = 0; i < 300; i++) {
    uint64_t o = std::uniform_int_distribution<uint64_t>(off - 2 * kBlock, off + len + kBlock)(rng);
    uint64_t l = std::uniform_int_distribution<uint64_t>(0, 3 * kBlock)(rng);
    ExpectRange(v2, expect2, o, l);
    if (HasFatalFailure()) return;
  }
  // A clone from a missing base fails and leaves no shard behind.
  ShardId v3 = v1;
  v3.version = 3;
  EXPECT_EQ(store_->Write(v3, 77, 0, std::string(kBlock, 'z'), cap).code(), Code::kNotFound);
  EXPECT_EQ(store_->Read(v3, 0, 1, out).code(), Code::kNotFound);
  // A clone with a different capacity is refused.
  EXPECT_EQ(store_->Write(v3, 1, 0, std::string(kBlock, 'z'), cap / 2).code(),
            Code::kInvalidArgument);
}

TEST_F(ShardStoreTest, CloneExtendingBaseDataLength) {
  std::mt19937_64 rng(5);
  const uint64_t cap = 256 * kKiB;
  ShardId v1{21, 0, 1, 0};
  ShardId v2 = v1;
  v2.version = 2;
  std::string d1 = RandomBytes(rng, 4 * kBlock);
  ASSERT_TRUE(store_->Write(v1, 0, 0, d1, cap).ok());
  // v2 appends right after v1's data.
  std::string d2 = RandomBytes(rng, 4 * kBlock);
  ASSERT_TRUE(store_->Write(v2, 1, 4 * kBlock, d2, cap).ok());
  std::string ref = d1 + d2;
  ref.resize(cap, '\0');
  for (uint64_t off = 0; off < cap; off += 3001) {
    ExpectRange(v2, ref, off, std::min<uint64_t>(5000, cap - off));
    if (HasFatalFailure()) return;
  }
}

// A shard whose first write starts past offset 0 (or a clone extended with
// a gap after the base's data): the never-written blocks below the data end
// should read as zeros, as the header comment promises.
TEST_F(ShardStoreTest, NewShardWrittenAtOffset) {
  std::mt19937_64 rng(6);
  const uint64_t cap = 64 * kKiB;
  const ShardId id{30, 0, 1, 0};
  std::string data = RandomBytes(rng, kBlock);
  ASSERT_TRUE(store_->Write(id, 0, 2 * kBlock, data, cap).ok());
  std::string ref = std::string(2 * kBlock, '\0') + data;
  ref.resize(cap, '\0');
  ExpectRange(id, ref, 0, 3 * kBlock);
  ExpectRange(id, ref, 2 * kBlock, kBlock);

  // The same through a clone: base has 1 block, v2 writes block 4.
  ShardId b1{31, 0, 1, 0};
  ShardId b2 = b1;
  b2.version = 2;
  std::string d1 = RandomBytes(rng, kBlock);
  ASSERT_TRUE(store_->Write(b1, 0, 0, d1, cap).ok());
  ASSERT_TRUE(store_->Write(b2, 1, 4 * kBlock, data, cap).ok());
  std::string ref2 = d1 + std::string(3 * kBlock, '\0') + data;
  ref2.resize(cap, '\0');
  ExpectRange(b2, ref2, 0, 5 * kBlock);
}

TEST_F(ShardStoreTest, MissingShardIsNotFound) {
  std::string out;
  EXPECT_EQ(store_->Read(ShardId{123, 4, 5, 6}, 0, 10, out).code(), Code::kNotFound);
  EXPECT_EQ(store_->Delete(ShardId{123, 4, 5, 6}).code(), Code::kNotFound);
}

TEST_F(ShardStoreTest, CorruptByteDetected) {
  std::mt19937_64 rng(7);
  const uint64_t cap = 1 * kMiB;
  const ShardId id{5, 6, 7, 1};
  std::string data = RandomBytes(rng, cap);
  ASSERT_TRUE(store_->Write(id, 0, 0, data, cap).ok());
  // Read it once before corrupting it; nothing cached may hide the damage.
  std::string out;
  ASSERT_TRUE(store_->Read(id, 0, cap, out).ok());

  const uint64_t data_off = 5000;  // inside block 1
  FlipByteOnDisk(id, data_off);
  if (HasFatalFailure()) return;
  Counter& failures = GetCounter("dss.checksum_failures");

  uint64_t before = failures.Get();
  out = "untouched";
  EXPECT_EQ(store_->Read(id, data_off, 1, out).code(), Code::kCorruption);
  EXPECT_EQ(failures.Get(), before + 1);
  // Any read touching block 1 fails, even if it does not include the byte.
  before = failures.Get();
  EXPECT_EQ(store_->Read(id, kBlock, 10, out).code(), Code::kCorruption);
  EXPECT_EQ(store_->Read(id, 0, cap, out).code(), Code::kCorruption);
  EXPECT_EQ(store_->Read(id, kBlock - 1, 2, out).code(), Code::kCorruption);
  EXPECT_EQ(failures.Get(), before + 3);

  // Other blocks still read fine.
  ExpectRange(id, data, 0, kBlock);
  ExpectRange(id, data, 2 * kBlock, cap - 2 * kBlock);
  ExpectRange(id, data, 2 * kBlock + 17, 100);
  ExpectRange(id, data, 0, 100);

  // The same through a freshly opened store (CRCs from the durable index).
  Reopen();
  if (HasFatalFailure()) return;
  EXPECT_EQ(store_->Read(id, data_off - 3, 8, out).code(), Code::kCorruption);
  ExpectRange(id, data, 3 * kBlock, kBlock);
}

TEST_F(ShardStoreTest, LargeShardCorruptionAndReopen) {
  std::mt19937_64 rng(8);
  const uint64_t cap = 4 * kMiB;  // a replicated 4 MiB chunk's shard: 1024 CRCs
  const ShardId id{8, 8, 8, 8};
  std::string data = RandomBytes(rng, cap);
  ASSERT_TRUE(store_->Write(id, 0, 0, data, cap).ok());
  FlipByteOnDisk(id, 1000 * kBlock + 3);
  if (HasFatalFailure()) return;
  std::string out;
  EXPECT_EQ(store_->Read(id, 1000 * kBlock, kBlock, out).code(), Code::kCorruption);
  ExpectRange(id, data, 999 * kBlock, kBlock);
  ExpectRange(id, data, 1001 * kBlock, kBlock);
  FlipByteOnDisk(id, 1023 * kBlock);  // the last block
  if (HasFatalFailure()) return;
  Reopen();
  if (HasFatalFailure()) return;
  EXPECT_EQ(store_->Read(id, 1023 * kBlock, 1, out).code(), Code::kCorruption);
  ExpectRange(id, data, 0, kBlock);
}

TEST_F(ShardStoreTest, ReopenKeepsShardsAndFreesUnrecordedSlots) {
  std::mt19937_64 rng(9);
  const uint64_t cap = 64 * kKiB;
  std::vector<std::pair<ShardId, std::string>> kept;
  for (uint64_t i = 0; i < 20; i++) {
    ShardId id{100 + i, i, 1, uint32_t(i % 6)};
    std::string d = RandomBytes(rng, (1 + i % 16) * kBlock);
    ASSERT_TRUE(store_->Write(id, 0, 0, d, cap).ok());
    d.resize(cap, '\0');
    kept.emplace_back(id, std::move(d));
  }
  ASSERT_TRUE(store_->Delete(kept[3].first).ok());
  kept.erase(kept.begin() + 3);
  Reopen();
  if (HasFatalFailure()) return;
  EXPECT_EQ(store_->ShardCount(), kept.size());
  for (auto& [id, ref] : kept) {
    ExpectRange(id, ref, 0, cap);
    if (HasFatalFailure()) return;
  }
  std::string out;
  EXPECT_EQ(store_->Read(ShardId{103, 3, 1, 3}, 0, 1, out).code(), Code::kNotFound);
  // New writes use the existing data files, and nothing collides.
  for (uint64_t i = 0; i < 5; i++) {
    ShardId id{900 + i, 0, 1, 0};
    ASSERT_TRUE(store_->Write(id, 0, 0, std::string(kBlock, char('a' + i)), cap).ok());
    ExpectRange(id, std::string(kBlock, char('a' + i)) + std::string(cap - kBlock, '\0'), 0, cap);
  }
  for (auto& [id, ref] : kept) ExpectRange(id, ref, 0, cap);
}

TEST_F(ShardStoreTest, DeleteThenReadIsNotFound) {
  const uint64_t cap = 64 * kKiB;
  const ShardId id{4, 4, 4, 4};
  ASSERT_TRUE(store_->Write(id, 0, 0, std::string(cap, 'q'), cap).ok());
  std::string out;
  ASSERT_TRUE(store_->Read(id, 0, 10, out).ok());
  ASSERT_TRUE(store_->Delete(id).ok());
  EXPECT_EQ(store_->Read(id, 0, 10, out).code(), Code::kNotFound);
  EXPECT_EQ(store_->Locate(id).error().code(), Code::kNotFound);
  EXPECT_EQ(store_->Delete(id).code(), Code::kNotFound);
  Reopen();  // the delete is durable
  if (HasFatalFailure()) return;
  EXPECT_EQ(store_->Read(id, 0, 10, out).code(), Code::kNotFound);
}

TEST_F(ShardStoreTest, RewriteSameIdReplacesCachedShard) {
  const uint64_t cap = 64 * kKiB;
  const ShardId id{40, 0, 1, 0};
  ASSERT_TRUE(store_->Write(id, 0, 0, std::string(cap, 'a'), cap).ok());
  std::string out;
  ASSERT_TRUE(store_->Read(id, 0, cap, out).ok());
  ASSERT_TRUE(store_->Write(id, 0, 0, std::string(2 * kBlock, 'b'), cap).ok());
  ASSERT_TRUE(store_->Read(id, 0, cap, out).ok());
  EXPECT_EQ(out, std::string(2 * kBlock, 'b') + std::string(cap - 2 * kBlock, '\0'));
}

TEST_F(ShardStoreTest, DistinctIdsDoNotCollide) {
  const uint64_t cap = 16 * kKiB;
  std::vector<ShardId> ids;
  for (uint64_t ino : {1, 2, 257})
    for (uint64_t chunk : {0, 1, 256})
      for (uint64_t ver : {1, 2})
        for (uint32_t sh : {0u, 1u}) ids.push_back({ino, chunk, ver, sh});
  for (size_t i = 0; i < ids.size(); i++)
    ASSERT_TRUE(store_->Write(ids[i], 0, 0, std::string(kBlock, char('A' + i % 50)), cap).ok());
  for (size_t i = 0; i < ids.size(); i++) {
    std::string out;
    ASSERT_TRUE(store_->Read(ids[i], 0, kBlock, out).ok());
    EXPECT_EQ(out, std::string(kBlock, char('A' + i % 50))) << ids[i].ToString();
  }
}

}  // namespace
}  // namespace rustfs::dss

namespace rustfs::dss {
namespace {

// ReadBatch through a real io_uring engine on O_DIRECT fds, checked piece by
// piece against the reference images: mixed shards, unaligned pieces, pieces
// past the written data, long (buffered) pieces, a missing shard and a
// corrupt block, each failing only itself.
TEST_F(ShardStoreTest, BatchedEngineReadsMatchReference) {
  RandomReadEngine::Options eo;
  eo.queue_depth = 64;  // fewer than the batch: the engine submits in waves
  eo.io_poll = false;
  auto engine = RandomReadEngine::Create(eo);
  ASSERT_TRUE(engine.has_value()) << engine.error().ToString();
  Reopen(std::move(*engine));
  if (HasFatalFailure()) return;
  Counter& submits = GetCounter("dss.uring_submits");

  std::mt19937_64 rng(21);
  const uint64_t cap = 1 * kMiB;
  std::vector<ShardId> ids;
  std::vector<std::string> refs;
  for (uint32_t i = 0; i < 4; i++) {
    ids.push_back({40 + i, i, 1, i});
    std::string ref = RandomBytes(rng, (i + 1) * 200 * kKiB);
    ASSERT_TRUE(store_->Write(ids.back(), 0, 0, ref, cap).ok());
    ref.resize(cap, '\0');
    refs.push_back(std::move(ref));
  }
  const ShardId missing{99, 0, 1, 0};
  const ShardId corrupt = ids[3];
  FlipByteOnDisk(corrupt, 10 * kBlock + 5);  // block 10 of shard 3
  if (HasFatalFailure()) return;

  for (int round = 0; round < 20; round++) {
    std::vector<ShardRead> reads;
    std::vector<std::string> outs(150);
    std::vector<size_t> which;
    for (size_t j = 0; j < outs.size(); j++) {
      size_t w = rng() % 5;  // 4 = the missing shard
      uint64_t off = rng() % cap;
      uint64_t len = std::min<uint64_t>(cap - off, j % 10 == 0 ? rng() % (400 * kKiB) : rng() % (3 * kBlock));
      outs[j].assign(len, 'x');
      reads.push_back({w < 4 ? ids[w] : missing, off, len, outs[j].data(), {}});
      which.push_back(w);
    }
    uint64_t submits_before = submits.Get();
    store_->ReadBatch(reads);
    EXPECT_GE(submits.Get(), submits_before + 1);
    for (size_t j = 0; j < reads.size(); j++) {
      const ShardRead& r = reads[j];
      if (which[j] == 4) {
        EXPECT_EQ(r.status.code(), Code::kNotFound);
        continue;
      }
      bool touches_bad = which[j] == 3 && r.length > 0 && r.offset < 11 * kBlock &&
                         r.offset + r.length > 10 * kBlock;
      if (touches_bad) {
        EXPECT_EQ(r.status.code(), Code::kCorruption) << r.offset << "+" << r.length;
        continue;
      }
      ASSERT_TRUE(r.status.ok()) << r.status.ToString() << " piece " << j;
      ASSERT_TRUE(outs[j] == refs[which[j]].substr(r.offset, r.length))
          << "piece " << j << " shard " << which[j] << " " << r.offset << "+" << r.length;
    }
  }
}

}  // namespace
}  // namespace rustfs::dss
