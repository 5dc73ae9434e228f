// ShardStore on a FaultyDiskIo (dss/disk_io.h): what a failing disk does to
// a real store, in-process and deterministically. Whatever fails, an
// acknowledged version stays byte-exact, a failed write publishes nothing
// (and frees its slot), a full disk says kNoSpace, and bytes that come back
// from the disk different are never returned as data.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "dss/disk_io.h"
#include "dss/shard_store.h"

namespace rustfs::dss {
namespace {

constexpr uint64_t kCap = 256 * 1024;
using Op = FaultyDiskIo::Op;

std::string Bytes(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = char(rng());
  return s;
}

class ShardStoreFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shard_store_fault_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void Reopen() {
    store_.reset();
    ShardStoreOptions o;
    o.data_file_bytes = 4 << 20;
    o.io = &io_;
    auto s = ShardStore::Open(dir_, nullptr, o);  // no engine: every read goes through io_
    ASSERT_TRUE(s.has_value()) << s.error().ToString();
    store_ = std::move(*s);
  }
  std::string ReadAll(const ShardId& id, Status* st = nullptr) {
    std::string out;
    Status s = store_->Read(id, 0, kCap, out);
    if (st) *st = s;
    return s.ok() ? out : std::string();
  }

  std::string dir_;
  FaultyDiskIo io_;
  std::unique_ptr<ShardStore> store_;
};

TEST_F(ShardStoreFaultTest, AFailedWritePublishesNothingAndKeepsTheOldVersion) {
  const ShardId v1{7, 0, 1, 2}, v2{7, 0, 2, 2};
  const std::string old = Bytes(1, kCap);
  ASSERT_TRUE(store_->Write(v1, 0, 0, old, kCap).ok());
  const size_t shards = store_->ShardCount();
  const std::string patch = Bytes(2, 64 * 1024);
  // Each step of building v2 from v1 fails in turn: the copy of the base's
  // other bytes, the write of the new ones, the sync that makes them durable.
  for (Op op : {Op::kCopy, Op::kWrite, Op::kSync}) {
    io_.Fail(op, Code::kIoError);
    Status s = store_->Write(v2, 1, 64 * 1024, patch, kCap);
    EXPECT_EQ(s.code(), Code::kIoError) << int(op) << " " << s.ToString();
    EXPECT_EQ(store_->ShardCount(), shards);  // v2 never recorded
    std::string out;
    EXPECT_EQ(store_->Read(v2, 0, 4096, out).code(), Code::kNotFound);
    EXPECT_EQ(ReadAll(v1), old);
  }
  // ...and after a restart (the index is what was synced).
  Reopen();
  EXPECT_EQ(store_->ShardCount(), shards);
  EXPECT_EQ(ReadAll(v1), old);
  // The disk recovers: the same write now succeeds and is exact.
  io_.Clear();
  ASSERT_TRUE(store_->Write(v2, 1, 64 * 1024, patch, kCap).ok());
  std::string want = old;
  want.replace(64 * 1024, patch.size(), patch);
  EXPECT_EQ(ReadAll(v2), want);
}

TEST_F(ShardStoreFaultTest, AFullDiskSaysNoSpace) {
  io_.Fail(Op::kWrite, Code::kNoSpace);
  Status s = store_->Write({9, 0, 1, 0}, 0, 0, Bytes(3, kCap), kCap);
  EXPECT_EQ(s.code(), Code::kNoSpace) << s.ToString();
  EXPECT_EQ(store_->ShardCount(), 0u);
  // A write after the space came back lands in the slot the failed one freed.
  ASSERT_TRUE(store_->Write({9, 0, 1, 0}, 0, 0, Bytes(3, kCap), kCap).ok());
  EXPECT_EQ(ReadAll({9, 0, 1, 0}), Bytes(3, kCap));
}

TEST_F(ShardStoreFaultTest, BitsFlippedOnTheWayBackAreCorruptionNeverData) {
  const ShardId id{5, 3, 1, 1};
  ASSERT_TRUE(store_->Write(id, 0, 0, Bytes(4, kCap), kCap).ok());
  // Every read path: a whole-shard read and a batch of small pieces.
  io_.FlipOnRead(1);
  Status st;
  EXPECT_TRUE(ReadAll(id, &st).empty());
  EXPECT_EQ(st.code(), Code::kCorruption) << st.ToString();
  std::string a(4096, 'x'), b(100, 'y');
  ShardRead reads[] = {{id, 8192, 4096, a.data(), {}}, {id, 70000, 100, b.data(), {}}};
  io_.FlipOnRead(2);
  store_->ReadBatch(reads);
  for (auto& r : reads) EXPECT_EQ(r.status.code(), Code::kCorruption) << r.status.ToString();
  // Nothing of the corrupt reads reached the caller's buffers: a failed
  // read leaves them as they were.
  EXPECT_EQ(a, std::string(4096, 'x'));
  EXPECT_EQ(b, std::string(100, 'y'));
  // The disk was fine all along: reads without the flip are exact.
  EXPECT_EQ(ReadAll(id), Bytes(4, kCap));
}

TEST_F(ShardStoreFaultTest, AReadErrorFailsOnlyItsPiece) {
  const ShardId x{1, 0, 1, 0}, y{2, 0, 1, 0};
  ASSERT_TRUE(store_->Write(x, 0, 0, Bytes(5, kCap), kCap).ok());
  ASSERT_TRUE(store_->Write(y, 0, 0, Bytes(6, kCap), kCap).ok());
  std::string a(4096, '\0'), b(4096, '\0');
  ShardRead reads[] = {{x, 0, 4096, a.data(), {}}, {y, 4096, 4096, b.data(), {}}};
  io_.Fail(Op::kRead, Code::kIoError);  // the first piece's read
  store_->ReadBatch(reads);
  EXPECT_EQ(reads[0].status.code(), Code::kIoError);
  ASSERT_TRUE(reads[1].status.ok()) << reads[1].status.ToString();
  EXPECT_EQ(b, Bytes(6, kCap).substr(4096, 4096));
}

}  // namespace
}  // namespace rustfs::dss
