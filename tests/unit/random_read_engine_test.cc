// RandomReadEngine is checked against pread(2) on a buffered fd of the same
// file: every op of a random batch (any alignment, crossing blocks, ending at
// or past EOF) must return exactly the reference bytes, short reads must be
// reported as documented, and a failing op must not disturb its neighbours.
// Files live under /var/tmp, not /tmp, which may be tmpfs where O_DIRECT is
// refused.
#include "dss/random_read_engine.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics.h"

namespace rustfs::dss {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kBlock = RandomReadEngine::kBlock;
// Not a multiple of the block, so EOF falls inside a block.
constexpr uint64_t kFileSize = 3 * kMiB + 1234;

void WriteFile(const std::string& path, const std::string& data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
  ASSERT_EQ(::pwrite(fd, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  ASSERT_EQ(::fsync(fd), 0);
  ::close(fd);
}

// What pread returns for [off, off+len): the reference for an op.
std::string Reference(int fd, uint64_t off, uint64_t len) {
  std::string out(len, '\0');
  uint64_t got = 0;
  while (got < len) {
    ssize_t n = ::pread(fd, out.data() + got, len - got, off + got);
    if (n <= 0) break;
    got += static_cast<uint64_t>(n);
  }
  out.resize(got);
  return out;
}

// One op with its own destination and the reference it must match.
struct Case {
  uint64_t offset = 0;
  uint64_t length = 0;
  std::vector<char> storage;  // dst lives at storage.data() + skew
  size_t skew = 0;            // misaligns dst on purpose
  std::string expect;
  char* dst() { return storage.data() + skew; }
};

// Random ops over a file of `size` bytes: lengths 1 B .. 256 KiB (mostly
// small, as random reads are), offsets anywhere including past EOF, with a
// share snapped to block boundaries, to end exactly at EOF, and to straddle
// a block boundary by a byte.
std::vector<Case> RandomCases(std::mt19937_64& rng, size_t n, uint64_t size, int ref_fd) {
  std::vector<Case> cases(n);
  for (auto& c : cases) {
    uint64_t len = rng() % 10 == 0 ? 1 + rng() % (256 * kKiB) : 1 + rng() % (16 * kKiB);
    uint64_t off = rng() % (size + 2 * kBlock);
    switch (rng() % 8) {
      case 0:  // fully aligned range
        off = off / kBlock * kBlock;
        len = (len + kBlock - 1) / kBlock * kBlock;
        break;
      case 1:  // ends exactly at EOF
        len = std::min(len, size);
        off = size - len;
        break;
      case 2:  // one byte either side of a block boundary
        off = std::max<uint64_t>(off / kBlock * kBlock, 1) - 1;
        len = std::max<uint64_t>(len, 2);
        break;
      case 3:  // runs past EOF
        off = size - std::min<uint64_t>(size, 1 + rng() % (4 * kBlock));
        break;
      default:
        break;
    }
    c.offset = off;
    c.length = len;
    // An aligned dst for some ops, so the engine's no-bounce path runs too.
    c.storage.resize(len + 2 * kBlock);
    uintptr_t base = reinterpret_cast<uintptr_t>(c.storage.data());
    size_t to_aligned = (kBlock - base % kBlock) % kBlock;
    c.skew = rng() % 2 == 0 ? to_aligned : rng() % kBlock;
    std::memset(c.storage.data(), 0xee, c.storage.size());
    c.expect = Reference(ref_fd, off, len);
  }
  return cases;
}

std::vector<ReadOp> OpsFor(std::vector<Case>& cases, int fd) {
  std::vector<ReadOp> ops;
  for (auto& c : cases) ops.push_back(ReadOp{fd, c.offset, c.length, c.dst()});
  return ops;
}

// Each op read exactly its reference; a range past EOF is a short read with
// the bytes before EOF delivered (the rest of dst is unspecified), and no
// byte outside [dst, dst + length) is written.
void CheckCases(std::vector<Case>& cases, const std::vector<ReadOp>& ops,
                const std::vector<Status>& st) {
  ASSERT_EQ(st.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    Case& c = cases[i];
    SCOPED_TRACE("op " + std::to_string(i) + " offset " + std::to_string(c.offset) + " length " +
                 std::to_string(c.length) + " skew " + std::to_string(c.skew));
    ASSERT_EQ(ops[i].bytes_read, c.expect.size());
    if (c.expect.size() == c.length) {
      ASSERT_TRUE(st[i].ok()) << st[i].ToString();
    } else {
      ASSERT_EQ(st[i].code(), Code::kShortRead) << st[i].ToString();
    }
    ASSERT_EQ(std::memcmp(c.dst(), c.expect.data(), c.expect.size()), 0);
    // Nothing written outside [dst, dst + length).
    for (size_t j = 0; j < c.skew; ++j)
      ASSERT_EQ(static_cast<unsigned char>(c.storage[j]), 0xee) << "byte before dst";
    for (size_t j = c.skew + c.length; j < c.storage.size(); ++j)
      ASSERT_EQ(static_cast<unsigned char>(c.storage[j]), 0xee) << "byte after dst";
  }
}

class RandomReadEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/var/tmp/rustfs_rre_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    path_ = dir_ + "/data";
    std::mt19937_64 rng(42);
    data_.resize(kFileSize);
    for (auto& ch : data_) ch = static_cast<char>(rng());
    WriteFile(path_, data_);
    ref_fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(ref_fd_, 0);
    auto f = RandomReadEngine::OpenForRead(path_, /*direct=*/true);
    ASSERT_TRUE(f.has_value()) << f.error().ToString();
    // /var/tmp is a disk filesystem on the machines this runs on; if it ever
    // is not, the tests still pass through the buffered fallback.
    EXPECT_TRUE(f->direct) << "O_DIRECT refused under /var/tmp; testing buffered reads only";
    fd_ = f->fd;
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    if (ref_fd_ >= 0) ::close(ref_fd_);
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::unique_ptr<RandomReadEngine> MakeEngine(uint32_t depth, bool io_poll = false) {
    RandomReadEngine::Options o;
    o.queue_depth = depth;
    o.io_poll = io_poll;
    o.probe_dir = dir_;
    auto e = RandomReadEngine::Create(o);
    EXPECT_TRUE(e.has_value()) << e.error().ToString();
    return e.has_value() ? std::move(*e) : nullptr;
  }

  std::string dir_, path_, data_;
  int fd_ = -1;
  int ref_fd_ = -1;
};

TEST_F(RandomReadEngineTest, RandomReadsMatchPreadInWaves) {
  auto engine = MakeEngine(64);
  ASSERT_NE(engine, nullptr);
  std::mt19937_64 rng(1);
  auto cases = RandomCases(rng, 2000, kFileSize, ref_fd_);
  auto ops = OpsFor(cases, fd_);
  uint64_t submits0 = GetCounter("dss.uring_submits").Get();
  uint64_t ops0 = GetCounter("dss.uring_ops").Get();
  std::vector<Status> st;
  ASSERT_TRUE(engine->ReadBatch(ops, &st).ok());
  CheckCases(cases, ops, st);
  uint64_t submits = GetCounter("dss.uring_submits").Get() - submits0;
  uint64_t sqes = GetCounter("dss.uring_ops").Get() - ops0;
  // Every op needs at least one SQE; 2000 ops cannot fit a 64-deep queue in
  // fewer than 32 submissions, and batching means far fewer than one each.
  EXPECT_GE(sqes, 2000u);
  EXPECT_GE(submits, 2000u / 64);
  EXPECT_LT(submits, sqes);
}

TEST_F(RandomReadEngineTest, DepthOneStillReadsEverything) {
  auto engine = MakeEngine(1);
  ASSERT_NE(engine, nullptr);
  std::mt19937_64 rng(2);
  auto cases = RandomCases(rng, 200, kFileSize, ref_fd_);
  auto ops = OpsFor(cases, fd_);
  std::vector<Status> st;
  ASSERT_TRUE(engine->ReadBatch(ops, &st).ok());
  CheckCases(cases, ops, st);
}

// A batch of one op on an idle engine is read with pread on the calling
// thread (no SQE): the same bytes, short reads and untouched neighbours as
// through the ring, for every shape of range RandomCases makes.
TEST_F(RandomReadEngineTest, LoneReadsTakePreadAndMatch) {
  auto engine = MakeEngine(16);
  ASSERT_NE(engine, nullptr);
  if (engine->io_poll_active()) GTEST_SKIP() << "a polled ring always takes the ring";
  std::mt19937_64 rng(7);
  auto cases = RandomCases(rng, 300, kFileSize, ref_fd_);
  auto ops = OpsFor(cases, fd_);
  Counter& sync = GetCounter("dss.sync_reads");
  Counter& sqes = GetCounter("dss.uring_ops");
  const uint64_t sync0 = sync.Get(), sqes0 = sqes.Get();
  std::vector<Status> all(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    std::vector<Status> st;
    ASSERT_TRUE(engine->ReadBatch(std::span(&ops[i], 1), &st).ok());
    ASSERT_EQ(st.size(), 1u);
    all[i] = st[0];
  }
  CheckCases(cases, ops, all);
  EXPECT_EQ(sync.Get() - sync0, ops.size());
  EXPECT_EQ(sqes.Get() - sqes0, 0u);
}

TEST_F(RandomReadEngineTest, LoneReadErrorsAreThoseOfTheRing) {
  auto engine = MakeEngine(16);
  ASSERT_NE(engine, nullptr);
  std::vector<char> buf(5000);
  for (int bad : {-1, 1000000}) {  // never a valid fd here
    std::vector<ReadOp> op = {{bad, 10, buf.size(), buf.data()}};
    std::vector<Status> st;
    ASSERT_TRUE(engine->ReadBatch(op, &st).ok());
    EXPECT_EQ(st[0].code(), Code::kIoError) << st[0].ToString();
    EXPECT_NE(st[0].message().find(std::strerror(EBADF)), std::string::npos) << st[0].ToString();
    EXPECT_EQ(op[0].bytes_read, 0u);
  }
  std::vector<ReadOp> past = {{fd_, kFileSize + 5000, buf.size(), buf.data()}};
  std::vector<Status> st;
  ASSERT_TRUE(engine->ReadBatch(past, &st).ok());
  EXPECT_EQ(st[0].code(), Code::kShortRead) << st[0].ToString();
  EXPECT_EQ(past[0].bytes_read, 0u);
}

TEST_F(RandomReadEngineTest, ConcurrentBatchesFromFourThreads) {
  auto engine = MakeEngine(64);
  ASSERT_NE(engine, nullptr);
  std::vector<std::thread> threads;
  std::vector<std::string> failures(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      for (int round = 0; round < 5; ++round) {
        auto cases = RandomCases(rng, 300, kFileSize, ref_fd_);
        auto ops = OpsFor(cases, fd_);
        std::vector<Status> st;
        Status s = engine->ReadBatch(ops, &st);
        if (!s.ok()) {
          failures[t] = s.ToString();
          return;
        }
        for (size_t i = 0; i < cases.size(); ++i) {
          const Case& c = cases[i];
          bool want_ok = c.expect.size() == c.length;
          if (st[i].ok() != want_ok || ops[i].bytes_read != c.expect.size() ||
              std::memcmp(cases[i].dst(), c.expect.data(), c.expect.size()) != 0) {
            failures[t] = "thread " + std::to_string(t) + " round " + std::to_string(round) +
                          " op " + std::to_string(i) + ": " + st[i].ToString();
            return;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& f : failures) EXPECT_EQ(f, "");
}

TEST_F(RandomReadEngineTest, IoPollRequestedWorksAndIsReported) {
  Counter& active = GetCounter("dss.io_poll_active");
  uint64_t before = active.Get();
  {
    auto engine = MakeEngine(32, /*io_poll=*/true);
    ASSERT_NE(engine, nullptr);
    // This machine's virtio disk refuses polling, so this is normally the
    // fallback; a device that polls must report it consistently instead.
    EXPECT_EQ(active.Get() - before, engine->io_poll_active() ? 1u : 0u);
    if (engine->io_poll_active()) GTEST_LOG_(INFO) << "IOPOLL active on " << dir_;
    std::mt19937_64 rng(3);
    auto cases = RandomCases(rng, 300, kFileSize, ref_fd_);
    auto ops = OpsFor(cases, fd_);
    std::vector<Status> st;
    ASSERT_TRUE(engine->ReadBatch(ops, &st).ok());
    CheckCases(cases, ops, st);
  }
  EXPECT_EQ(active.Get(), before);  // the engine is gone, so is its polled ring
}

TEST_F(RandomReadEngineTest, IoPollWithoutDirectOrProbeDirFallsBack) {
  uint64_t before = GetCounter("dss.io_poll_active").Get();
  RandomReadEngine::Options o;
  o.io_poll = true;
  o.direct = false;
  o.probe_dir = dir_;
  auto e = RandomReadEngine::Create(o);
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  EXPECT_FALSE((*e)->io_poll_active());
  o.direct = true;
  o.probe_dir.clear();
  auto e2 = RandomReadEngine::Create(o);
  ASSERT_TRUE(e2.has_value()) << e2.error().ToString();
  EXPECT_FALSE((*e2)->io_poll_active());
  EXPECT_EQ(GetCounter("dss.io_poll_active").Get(), before);
}

TEST_F(RandomReadEngineTest, BadFdFailsOnlyItsOp) {
  auto engine = MakeEngine(16);
  ASSERT_NE(engine, nullptr);
  int closed = ::dup(fd_);
  ASSERT_GE(closed, 0);
  ::close(closed);  // single-threaded here, so the number stays unused
  std::vector<char> a(5000), b(100), c(8192), d(10);
  std::vector<ReadOp> ops = {
      {fd_, 10, a.size(), a.data()},
      {closed, 0, b.size(), b.data()},
      {fd_, 4096, c.size(), c.data()},
      {-1, 0, d.size(), d.data()},
  };
  std::vector<Status> st;
  ASSERT_TRUE(engine->ReadBatch(ops, &st).ok());
  ASSERT_EQ(st.size(), 4u);
  EXPECT_TRUE(st[0].ok()) << st[0].ToString();
  EXPECT_TRUE(st[2].ok()) << st[2].ToString();
  EXPECT_EQ(std::memcmp(a.data(), data_.data() + 10, a.size()), 0);
  EXPECT_EQ(std::memcmp(c.data(), data_.data() + 4096, c.size()), 0);
  for (int i : {1, 3}) {
    EXPECT_EQ(st[i].code(), Code::kIoError) << st[i].ToString();
    EXPECT_NE(st[i].message().find(std::strerror(EBADF)), std::string::npos) << st[i].ToString();
    EXPECT_EQ(ops[i].bytes_read, 0u);
  }
}

TEST_F(RandomReadEngineTest, ShortReadAtEofIsReported) {
  auto engine = MakeEngine(8);
  ASSERT_NE(engine, nullptr);
  std::vector<char> straddle(10000), past(100), exact(1234), aligned_tail(8192);
  // Aligned range whose second block is past EOF (the no-bounce path when
  // dst happens to be aligned, the bounce path otherwise).
  const uint64_t tail_off = kFileSize / kBlock * kBlock - kBlock;
  std::vector<ReadOp> ops = {
      {fd_, kFileSize - 100, straddle.size(), straddle.data()},
      {fd_, kFileSize + 5000, past.size(), past.data()},
      {fd_, kFileSize - 1234, exact.size(), exact.data()},
      {fd_, tail_off, aligned_tail.size(), aligned_tail.data()},
  };
  std::vector<Status> st;
  ASSERT_TRUE(engine->ReadBatch(ops, &st).ok());
  EXPECT_EQ(st[0].code(), Code::kShortRead) << st[0].ToString();
  EXPECT_EQ(ops[0].bytes_read, 100u);
  EXPECT_EQ(std::memcmp(straddle.data(), data_.data() + kFileSize - 100, 100), 0);
  EXPECT_EQ(st[1].code(), Code::kShortRead) << st[1].ToString();
  EXPECT_EQ(ops[1].bytes_read, 0u);
  EXPECT_TRUE(st[2].ok()) << st[2].ToString();  // ends exactly at EOF: not short
  EXPECT_EQ(ops[2].bytes_read, 1234u);
  EXPECT_EQ(std::memcmp(exact.data(), data_.data() + kFileSize - 1234, 1234), 0);
  EXPECT_EQ(st[3].code(), Code::kShortRead) << st[3].ToString();
  EXPECT_EQ(ops[3].bytes_read, kFileSize - tail_off);
  EXPECT_EQ(std::memcmp(aligned_tail.data(), data_.data() + tail_off, kFileSize - tail_off), 0);
}

TEST_F(RandomReadEngineTest, FileOfWholeBlocksEndsCleanly) {
  // EOF on a block boundary: the aligned read comes back short but aligned,
  // so the engine asks again and gets 0, which must end the op.
  std::string path = dir_ + "/blocks";
  WriteFile(path, data_.substr(0, 2 * kBlock));
  auto f = RandomReadEngine::OpenForRead(path, true);
  ASSERT_TRUE(f.has_value());
  auto engine = MakeEngine(4);
  ASSERT_NE(engine, nullptr);
  void* mem = nullptr;
  ASSERT_EQ(::posix_memalign(&mem, kBlock, 8 * kBlock), 0);
  std::unique_ptr<char, decltype(&std::free)> buf(static_cast<char*>(mem), &std::free);
  // Alone (pread on this thread) and two at once (through the ring).
  for (size_t n : {1, 2}) {
    SCOPED_TRACE(std::to_string(n) + " op(s)");
    std::vector<ReadOp> ops;
    for (size_t i = 0; i < n; ++i) ops.push_back({f->fd, 0, 4 * kBlock, buf.get() + i * 4 * kBlock});
    std::vector<Status> st;
    ASSERT_TRUE(engine->ReadBatch(ops, &st).ok());
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(st[i].code(), Code::kShortRead) << st[i].ToString();
      EXPECT_EQ(ops[i].bytes_read, 2 * kBlock);
      EXPECT_EQ(std::memcmp(ops[i].dst, data_.data(), 2 * kBlock), 0);
    }
  }
  ::close(f->fd);
}

TEST_F(RandomReadEngineTest, InvalidOpsAndArguments) {
  auto engine = MakeEngine(8);
  ASSERT_NE(engine, nullptr);
  std::vector<char> a(100);
  std::vector<ReadOp> ops = {
      {fd_, 0, 0, nullptr},  // empty: OK, nothing read
      {fd_, 0, 10, nullptr},
      {fd_, 0, RandomReadEngine::kMaxOpBytes + 1, a.data()},
      {fd_, UINT64_MAX - 5, 10, a.data()},
      {fd_, 7, a.size(), a.data()},
  };
  std::vector<Status> st;
  ASSERT_TRUE(engine->ReadBatch(ops, &st).ok());
  EXPECT_TRUE(st[0].ok());
  EXPECT_EQ(ops[0].bytes_read, 0u);
  for (int i : {1, 2, 3}) EXPECT_EQ(st[i].code(), Code::kInvalidArgument) << i;
  EXPECT_TRUE(st[4].ok()) << st[4].ToString();
  EXPECT_EQ(std::memcmp(a.data(), data_.data() + 7, a.size()), 0);
  EXPECT_EQ(engine->ReadBatch(ops, nullptr).code(), Code::kInvalidArgument);
  std::vector<ReadOp> none;
  EXPECT_TRUE(engine->ReadBatch(none, &st).ok());
  EXPECT_TRUE(st.empty());

  RandomReadEngine::Options o;
  o.queue_depth = 0;
  EXPECT_EQ(RandomReadEngine::Create(o).error().code(), Code::kInvalidArgument);
  o.queue_depth = RandomReadEngine::kMaxQueueDepth + 1;
  EXPECT_EQ(RandomReadEngine::Create(o).error().code(), Code::kInvalidArgument);
}

TEST_F(RandomReadEngineTest, CreateAndDestroyIdle) {
  // An engine goes promptly with nothing ever in flight, and after work.
  for (int i = 0; i < 20; ++i) {
    auto engine = MakeEngine(16);
    ASSERT_NE(engine, nullptr);
    if (i % 2 == 1) {
      char b[10];
      std::vector<ReadOp> ops = {{fd_, 1, sizeof b, b}};
      std::vector<Status> st;
      ASSERT_TRUE(engine->ReadBatch(ops, &st).ok());
      ASSERT_TRUE(st[0].ok());
    }
  }
}

// Reads `path` (of `size` bytes) through fd with both engine modes that suit
// it and checks them against pread on a buffered fd.
void CheckEngineReads(const std::string& path, int fd, bool fd_direct, uint64_t size,
                      uint64_t seed) {
  std::mt19937_64 rng(seed);
  int ref = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(ref, 0);
  // Aligned bounce reads (direct) work on any fd; exact reads straight into
  // dst (!direct) only on a buffered one.
  for (bool direct : {true, false}) {
    if (!direct && fd_direct) continue;
    SCOPED_TRACE(direct ? "engine direct" : "engine buffered");
    RandomReadEngine::Options o;
    o.queue_depth = 16;
    o.direct = direct;
    auto e = RandomReadEngine::Create(o);
    ASSERT_TRUE(e.has_value()) << e.error().ToString();
    auto cases = RandomCases(rng, 100, size, ref);
    auto ops = OpsFor(cases, fd);
    std::vector<Status> st;
    ASSERT_TRUE((*e)->ReadBatch(ops, &st).ok());
    CheckCases(cases, ops, st);
  }
  ::close(ref);
}

bool FdIsDirect(int fd) { return (::fcntl(fd, F_GETFL) & O_DIRECT) != 0; }

TEST(OpenForReadTest, TmpfsReadsInWhicheverModeItGets) {
  // tmpfs refused O_DIRECT (EINVAL) until Linux 6.6 and accepts it since, so
  // either answer is right here; it must be reported truthfully and reads
  // must work.
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  char tmpl[] = "/dev/shm/rustfs_rre_test.XXXXXX";
  int wfd = ::mkstemp(tmpl);
  ASSERT_GE(wfd, 0);
  std::string path = tmpl;
  std::mt19937_64 rng(7);
  std::string data(100 * kKiB + 77, '\0');
  for (auto& ch : data) ch = static_cast<char>(rng());
  ASSERT_EQ(::pwrite(wfd, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  ::close(wfd);

  auto f = RandomReadEngine::OpenForRead(path, /*direct=*/true);
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  EXPECT_EQ(f->direct, FdIsDirect(f->fd));
  CheckEngineReads(path, f->fd, f->direct, data.size(), 8);
  ::close(f->fd);

  auto plain = RandomReadEngine::OpenForRead(path, /*direct=*/false);
  ASSERT_TRUE(plain.has_value());
  EXPECT_FALSE(plain->direct);
  EXPECT_FALSE(FdIsDirect(plain->fd));
  ::close(plain->fd);
  ::unlink(path.c_str());
}

TEST(OpenForReadTest, RefusedODirectFallsBackToBuffered) {
  // procfs refuses O_DIRECT with EINVAL, as tmpfs did before Linux 6.6, and
  // /proc/version does not change while the test runs.
  const std::string path = "/proc/version";
  std::string text;
  {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) GTEST_SKIP() << "no " << path;
    text = Reference(fd, 0, 64 * kKiB);
    ::close(fd);
  }
  auto f = RandomReadEngine::OpenForRead(path, /*direct=*/true);
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  EXPECT_FALSE(f->direct);
  EXPECT_FALSE(FdIsDirect(f->fd));
  CheckEngineReads(path, f->fd, f->direct, text.size(), 9);
  ::close(f->fd);
}

TEST(OpenForReadTest, MissingFileIsNotFound) {
  auto f = RandomReadEngine::OpenForRead("/var/tmp/rustfs-no-such-file-here", true);
  ASSERT_FALSE(f.has_value());
  EXPECT_EQ(f.error().code(), Code::kNotFound);
}

}  // namespace
}  // namespace rustfs::dss
