#include "client/access_detector.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <deque>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace rustfs::client {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
using Decision = AccessDetector::Decision;

// A bitmap of the bytes of a file asked to be prefetched, so a test can prove
// no byte is asked for twice and none past the end of the file. One bit per
// byte: keep the files these tests use to tens of MiB.
class PrefetchMap {
 public:
  explicit PrefetchMap(uint64_t file_size) : bits_(file_size, false) {}

  void Add(const Decision& d) {
    if (d.prefetch_length == 0) return;
    ++windows_;
    ASSERT_LE(d.prefetch_offset + d.prefetch_length, bits_.size())
        << "prefetch [" << d.prefetch_offset << ", +" << d.prefetch_length << ") past EOF";
    // Plain loop, one assertion: a window can be megabytes.
    uint64_t twice = kMax;
    for (uint64_t b = d.prefetch_offset; b < d.prefetch_offset + d.prefetch_length; ++b) {
      if (bits_[b] && twice == kMax) twice = b;
      bits_[b] = true;
    }
    ASSERT_EQ(twice, kMax) << "byte " << twice << " prefetched twice";
  }
  bool Prefetched(uint64_t b) const { return bits_[b]; }
  int windows() const { return windows_; }

 private:
  std::vector<bool> bits_;
  int windows_ = 0;
};

TEST(AccessDetectorTest, ModeNames) {
  EXPECT_STREQ(ModeName(AccessMode::kUnknown), "unknown");
  EXPECT_STREQ(ModeName(AccessMode::kSequential), "sequential");
  EXPECT_STREQ(ModeName(AccessMode::kRandom), "random");
  EXPECT_STREQ(ModeName(AccessMode::kAccessPlan), "access-plan");
  EXPECT_STREQ(ModeName(static_cast<AccessMode>(42)), "unknown");
}

TEST(AccessDetectorTest, HintKindFromPosixAdvice) {
  EXPECT_EQ(HintKindFromAdvice(POSIX_FADV_NORMAL), HintKind::kNormal);
  EXPECT_EQ(HintKindFromAdvice(POSIX_FADV_SEQUENTIAL), HintKind::kSequential);
  EXPECT_EQ(HintKindFromAdvice(POSIX_FADV_RANDOM), HintKind::kRandom);
  EXPECT_EQ(HintKindFromAdvice(POSIX_FADV_WILLNEED), HintKind::kWillNeed);
  EXPECT_EQ(HintKindFromAdvice(POSIX_FADV_DONTNEED), HintKind::kDontNeed);
  EXPECT_EQ(HintKindFromAdvice(POSIX_FADV_NOREUSE), std::nullopt);
  EXPECT_EQ(HintKindFromAdvice(-1), std::nullopt);
  EXPECT_EQ(HintKindFromAdvice(99), std::nullopt);
}

TEST(AccessDetectorTest, SequentialScanIsDetectedAfterAFewReads) {
  AccessDetector d;
  EXPECT_EQ(d.mode(), AccessMode::kUnknown);
  const uint64_t size = 64 * kMiB;
  Decision r1 = d.OnRead(0, 64 * kKiB, size);
  Decision r2 = d.OnRead(64 * kKiB, 64 * kKiB, size);
  EXPECT_EQ(r1.mode, AccessMode::kUnknown);
  EXPECT_EQ(r2.mode, AccessMode::kUnknown);
  EXPECT_EQ(r1.prefetch_length + r2.prefetch_length, 0u) << "no prefetch before detection";
  Decision r3 = d.OnRead(128 * kKiB, 64 * kKiB, size);
  EXPECT_EQ(r3.mode, AccessMode::kSequential);
  EXPECT_EQ(d.mode(), AccessMode::kSequential);
  // The first window starts where the detecting read ended.
  EXPECT_EQ(r3.prefetch_offset, 192 * kKiB);
  EXPECT_EQ(r3.prefetch_length, AccessDetector::Options().initial_window);
}

TEST(AccessDetectorTest, ScanNotStartingAtZeroIsDetectedToo) {
  AccessDetector d;
  const uint64_t size = kGiB;
  uint64_t off = 300 * kMiB + 4096;
  AccessMode m = AccessMode::kUnknown;
  for (int i = 0; i < 4; ++i, off += 32 * kKiB) m = d.OnRead(off, 32 * kKiB, size).mode;
  EXPECT_EQ(m, AccessMode::kSequential);
}

TEST(AccessDetectorTest, SmallGapsStillCountAsSequential) {
  AccessDetector d;
  const uint64_t size = kGiB;
  // Reads of 4 KiB skipping 8 KiB (inside the 16 KiB gap) each time.
  for (uint64_t off = 0; off < 40 * 12 * kKiB; off += 12 * kKiB) d.OnRead(off, 4 * kKiB, size);
  EXPECT_EQ(d.mode(), AccessMode::kSequential);
}

TEST(AccessDetectorTest, WindowsGrowGeometricallyToTheMax) {
  AccessDetector::Options o;
  AccessDetector d(o);
  const uint64_t size = 4 * kGiB;
  std::vector<Decision> windows;
  for (uint64_t off = 0; off < 200 * kMiB; off += 64 * kKiB) {
    Decision r = d.OnRead(off, 64 * kKiB, size);
    if (r.prefetch_length != 0) windows.push_back(r);
  }
  ASSERT_GE(windows.size(), 10u);
  uint64_t expect = o.initial_window;
  for (size_t i = 0; i < windows.size(); ++i) {
    EXPECT_EQ(windows[i].prefetch_length, expect) << "window " << i;
    if (i > 0) {
      // Each window continues exactly where the previous one ended.
      EXPECT_EQ(windows[i].prefetch_offset,
                windows[i - 1].prefetch_offset + windows[i - 1].prefetch_length);
    }
    expect = std::min(expect * 2, o.max_window);
  }
  EXPECT_EQ(windows.back().prefetch_length, o.max_window);
  EXPECT_EQ(d.window(), o.max_window);
}

TEST(AccessDetectorTest, CustomWindowOptions) {
  AccessDetector::Options o;
  o.initial_window = 16 * kKiB;
  o.max_window = 100 * kKiB;  // not a power-of-two multiple: the cap still holds
  AccessDetector d(o);
  std::vector<uint64_t> lengths;
  for (uint64_t off = 0; off < 4 * kMiB; off += 8 * kKiB) {
    Decision r = d.OnRead(off, 8 * kKiB, kGiB);
    if (r.prefetch_length) lengths.push_back(r.prefetch_length);
  }
  ASSERT_GE(lengths.size(), 5u);
  EXPECT_EQ(lengths[0], 16 * kKiB);
  EXPECT_EQ(lengths[1], 32 * kKiB);
  EXPECT_EQ(lengths[2], 64 * kKiB);
  EXPECT_EQ(lengths[3], 100 * kKiB);
  EXPECT_EQ(lengths.back(), 100 * kKiB);
}

TEST(AccessDetectorTest, MaxBelowInitialIsRaisedToInitial) {
  AccessDetector::Options o;
  o.initial_window = 64 * kKiB;
  o.max_window = 4 * kKiB;
  AccessDetector d(o);
  for (uint64_t off = 0; off < 2 * kMiB; off += 16 * kKiB) {
    Decision r = d.OnRead(off, 16 * kKiB, kGiB);
    if (r.prefetch_length) { EXPECT_EQ(r.prefetch_length, 64 * kKiB); }
  }
}

// A full sequential scan with uneven read sizes: no byte prefetched twice,
// none past EOF, and once the stream is running every byte the reader asks
// for was prefetched before it got there.
void ScanFile(uint64_t size, uint32_t seed) {
  SCOPED_TRACE("file size " + std::to_string(size));
  AccessDetector d;
  PrefetchMap map(size);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint64_t> len_dist(1, 128 * kKiB);  // <= initial window
  uint64_t first_window = kMax;
  int reads = 0;
  for (uint64_t off = 0; off < size;) {
    const uint64_t len = std::min(len_dist(rng), size - off);
    if (first_window != kMax) {
      uint64_t missing = kMax;
      for (uint64_t b = std::max(off, first_window); b < off + len && missing == kMax; ++b) {
        if (!map.Prefetched(b)) missing = b;
      }
      ASSERT_EQ(missing, kMax) << "byte " << missing << " read before it was prefetched";
    }
    Decision r = d.OnRead(off, len, size);
    ASSERT_NO_FATAL_FAILURE(map.Add(r));
    if (r.prefetch_length && first_window == kMax) first_window = r.prefetch_offset;
    off += len;
    ++reads;
  }
  if (reads >= 3) { EXPECT_EQ(d.mode(), AccessMode::kSequential); }
  // Reading past EOF (a racing truncate, or a read at EOF) asks for nothing.
  EXPECT_EQ(d.OnRead(size, 4096, size).prefetch_length, 0u);
}

TEST(AccessDetectorTest, SequentialScanPrefetchesEachByteAtMostOnce) {
  ScanFile(37 * kMiB + 12345, 1);
  ScanFile(64 * kMiB, 2);            // ends on a window boundary
  ScanFile(200 * kKiB, 3);           // smaller than two windows
  ScanFile(40 * kKiB, 4);            // smaller than one window
  ScanFile(3 * kMiB + 1, 5);
}

TEST(AccessDetectorTest, FileShorterThanWindowClampsToEof) {
  AccessDetector d;
  const uint64_t size = 100 * kKiB;
  d.OnRead(0, 4 * kKiB, size);
  d.OnRead(4 * kKiB, 4 * kKiB, size);
  Decision r = d.OnRead(8 * kKiB, 4 * kKiB, size);
  EXPECT_EQ(r.prefetch_offset, 12 * kKiB);
  EXPECT_EQ(r.prefetch_length, size - 12 * kKiB);
  for (uint64_t off = 12 * kKiB; off < size; off += 4 * kKiB) {
    EXPECT_EQ(d.OnRead(off, 4 * kKiB, size).prefetch_length, 0u) << off;
  }
}

TEST(AccessDetectorTest, UniformRandomReadsAreRandomWithoutPrefetch) {
  AccessDetector d;
  const uint64_t size = 10 * kGiB;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> off_dist(0, size / 4096 - 1);
  for (int i = 0; i < 2000; ++i) {
    Decision r = d.OnRead(off_dist(rng) * 4096, 4096, size);
    EXPECT_EQ(r.prefetch_length, 0u) << "read " << i;
    if (i >= 2) { EXPECT_EQ(r.mode, AccessMode::kRandom) << "read " << i; }
  }
  EXPECT_EQ(d.window(), 0u);
}

TEST(AccessDetectorTest, FollowsSequentialRandomSequential) {
  AccessDetector d;
  const uint64_t size = 8 * kGiB;
  uint64_t off = 0;
  for (int i = 0; i < 64; ++i, off += 64 * kKiB) d.OnRead(off, 64 * kKiB, size);
  ASSERT_EQ(d.mode(), AccessMode::kSequential);
  ASSERT_GT(d.window(), 0u);

  std::mt19937_64 rng(11);
  std::uniform_int_distribution<uint64_t> off_dist(1 * kGiB, 7 * kGiB);
  // One stray read does not flip the mode...
  EXPECT_EQ(d.OnRead(off_dist(rng) & ~uint64_t{4095}, 4096, size).mode, AccessMode::kSequential);
  // ...but a run of them does, within the history length.
  int to_random = 1;
  while (d.OnRead(off_dist(rng) & ~uint64_t{4095}, 4096, size).mode != AccessMode::kRandom) {
    ASSERT_LT(++to_random, 8) << "still sequential after many random reads";
  }
  EXPECT_EQ(d.window(), 0u) << "random mode resets the window";
  for (int i = 0; i < 100; ++i) {
    Decision r = d.OnRead(off_dist(rng) & ~uint64_t{4095}, 4096, size);
    EXPECT_EQ(r.mode, AccessMode::kRandom);
    EXPECT_EQ(r.prefetch_length, 0u);
  }

  // A new scan elsewhere: sequential again within the history length, and
  // read-ahead restarts from the initial window at the reader's position.
  off = 5 * kGiB;
  int to_seq = 0;
  Decision r;
  do {
    ASSERT_LT(++to_seq, 9) << "still random after many sequential reads";
    r = d.OnRead(off, 64 * kKiB, size);
    off += 64 * kKiB;
  } while (r.mode != AccessMode::kSequential);
  EXPECT_EQ(r.prefetch_offset, off);
  EXPECT_EQ(r.prefetch_length, AccessDetector::Options().initial_window);
}

TEST(AccessDetectorTest, OneStrayReadDoesNotDisturbTheStream) {
  AccessDetector d;
  const uint64_t size = 64 * kMiB;
  PrefetchMap map(size);
  uint64_t off = 0;
  for (int i = 0; i < 100; ++i, off += 64 * kKiB) ASSERT_NO_FATAL_FAILURE(map.Add(d.OnRead(off, 64 * kKiB, size)));
  const uint64_t window = d.window();
  ASSERT_GT(window, 0u);
  // An index lookup far away, then the scan goes on where it was.
  Decision stray = d.OnRead(60 * kMiB, 4096, size);
  EXPECT_EQ(stray.mode, AccessMode::kSequential);
  EXPECT_EQ(stray.prefetch_length, 0u) << "a stray read starts no stream";
  for (int i = 0; i < 100; ++i, off += 64 * kKiB) {
    Decision r = d.OnRead(off, 64 * kKiB, size);
    EXPECT_EQ(r.mode, AccessMode::kSequential);
    ASSERT_NO_FATAL_FAILURE(map.Add(r));  // continues the old windows: no byte twice
  }
  EXPECT_GE(d.window(), window) << "the window was not reset";
}

TEST(AccessDetectorTest, SlightlyReorderedReadsStaySequential) {
  // FUSE serves a file's reads on several threads: pairs arrive swapped.
  AccessDetector d;
  const uint64_t size = 64 * kMiB;
  PrefetchMap map(size);
  const uint64_t block = 128 * kKiB;
  int windows = 0;
  for (uint64_t i = 0; i + 1 < size / block; i += 2) {
    for (uint64_t j : {i + 1, i}) {
      Decision r = d.OnRead(j * block, block, size);
      if (i >= 8) { EXPECT_EQ(r.mode, AccessMode::kSequential) << j; }
      ASSERT_NO_FATAL_FAILURE(map.Add(r));
      windows += r.prefetch_length != 0;
    }
  }
  EXPECT_GT(windows, 10);
  EXPECT_EQ(d.window(), AccessDetector::Options().max_window) << "the window kept growing";
}

TEST(AccessDetectorTest, OvertakenReadsDoNotRestartAPinnedStream) {
  AccessDetector d;
  d.Hint(HintKind::kSequential, 0, 0);
  const uint64_t size = 64 * kMiB;
  PrefetchMap map(size);
  const uint64_t block = 128 * kKiB;
  for (uint64_t i = 0; i + 1 < size / block; i += 2) {
    for (uint64_t j : {i + 1, i}) ASSERT_NO_FATAL_FAILURE(map.Add(d.OnRead(j * block, block, size)));
  }
  EXPECT_EQ(d.window(), AccessDetector::Options().max_window);
}

TEST(AccessDetectorTest, ForwardSkipInsidePrefetchedDataContinuesTheStream) {
  AccessDetector d;
  const uint64_t size = 64 * kMiB;
  PrefetchMap map(size);
  uint64_t off = 0;
  for (int i = 0; i < 20; ++i, off += 64 * kKiB) ASSERT_NO_FATAL_FAILURE(map.Add(d.OnRead(off, 64 * kKiB, size)));
  // Skip 200 KiB ahead (more than the sequential gap, less than prefetched).
  off += 200 * kKiB;
  for (int i = 0; i < 50; ++i, off += 64 * kKiB) {
    Decision r = d.OnRead(off, 64 * kKiB, size);
    EXPECT_EQ(r.mode, AccessMode::kSequential);
    ASSERT_NO_FATAL_FAILURE(map.Add(r));
  }
}

TEST(AccessDetectorTest, RandomHintPinsUntilNormal) {
  AccessDetector d;
  const uint64_t size = kGiB;
  uint64_t off = 0;
  for (int i = 0; i < 10; ++i, off += 64 * kKiB) d.OnRead(off, 64 * kKiB, size);
  ASSERT_EQ(d.mode(), AccessMode::kSequential);

  d.Hint(HintKind::kRandom, 0, 0);
  EXPECT_EQ(d.mode(), AccessMode::kRandom);
  EXPECT_EQ(d.window(), 0u);
  for (int i = 0; i < 30; ++i, off += 64 * kKiB) {
    Decision r = d.OnRead(off, 64 * kKiB, size);
    EXPECT_EQ(r.mode, AccessMode::kRandom) << "sequential reads cannot override the hint";
    EXPECT_EQ(r.prefetch_length, 0u);
  }
  // Detection kept watching: NORMAL returns to what it saw.
  d.Hint(HintKind::kNormal, 0, 0);
  EXPECT_EQ(d.mode(), AccessMode::kSequential);
  Decision r = d.OnRead(off, 64 * kKiB, size);
  EXPECT_EQ(r.prefetch_offset, off + 64 * kKiB);
  EXPECT_EQ(r.prefetch_length, AccessDetector::Options().initial_window);
}

TEST(AccessDetectorTest, SequentialHintPinsUntilNormal) {
  AccessDetector d;
  const uint64_t size = 10 * kGiB;
  d.Hint(HintKind::kSequential, 0, 0);
  EXPECT_EQ(d.mode(), AccessMode::kSequential);
  // Read-ahead starts at the very first read, without waiting for evidence.
  Decision first = d.OnRead(5 * kGiB, 4096, size);
  EXPECT_EQ(first.mode, AccessMode::kSequential);
  EXPECT_EQ(first.prefetch_offset, 5 * kGiB + 4096);
  EXPECT_GT(first.prefetch_length, 0u);

  std::mt19937_64 rng(3);
  std::uniform_int_distribution<uint64_t> off_dist(0, size / 4096 - 1);
  for (int i = 0; i < 30; ++i) {
    EXPECT_EQ(d.OnRead(off_dist(rng) * 4096, 4096, size).mode, AccessMode::kSequential);
  }
  d.Hint(HintKind::kNormal, 0, 0);
  EXPECT_EQ(d.mode(), AccessMode::kRandom);
  Decision r = d.OnRead(off_dist(rng) * 4096, 4096, size);
  EXPECT_EQ(r.mode, AccessMode::kRandom);
  EXPECT_EQ(r.prefetch_length, 0u);
  EXPECT_EQ(d.window(), 0u);
}

TEST(AccessDetectorTest, LaterModeHintReplacesEarlier) {
  AccessDetector d;
  d.Hint(HintKind::kRandom, 0, 0);
  d.Hint(HintKind::kSequential, 0, 0);
  EXPECT_EQ(d.mode(), AccessMode::kSequential);
  d.Hint(HintKind::kNormal, 0, 0);
  EXPECT_EQ(d.mode(), AccessMode::kUnknown);
}

TEST(AccessDetectorTest, WillNeedIsSurfacedOnce) {
  AccessDetector d;
  EXPECT_EQ(d.TakeWillNeed(), std::nullopt);
  d.Hint(HintKind::kWillNeed, kMiB, 64 * kKiB);
  d.Hint(HintKind::kWillNeed, 8 * kMiB, 0);  // 0 = through end of file
  EXPECT_EQ(d.mode(), AccessMode::kUnknown) << "WILLNEED says nothing about the pattern";
  EXPECT_EQ(d.TakeDontNeed(), std::nullopt) << "the queues are separate";
  EXPECT_EQ(d.TakeWillNeed(), (ByteRange{kMiB, 64 * kKiB}));
  std::optional<ByteRange> to_eof = d.TakeWillNeed();
  ASSERT_TRUE(to_eof);
  EXPECT_EQ(to_eof->offset, 8 * kMiB);
  EXPECT_EQ(to_eof->end(), kMax);
  EXPECT_EQ(d.TakeWillNeed(), std::nullopt);
  // Reads do not resurface it.
  d.OnRead(0, 4096, kGiB);
  EXPECT_EQ(d.TakeWillNeed(), std::nullopt);
}

TEST(AccessDetectorTest, HintRangesNeverOverflow) {
  AccessDetector d;
  d.Hint(HintKind::kWillNeed, kMax - 10, 100);
  d.Hint(HintKind::kWillNeed, kMax, 5);  // empty: dropped
  std::optional<ByteRange> r = d.TakeWillNeed();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->offset, kMax - 10);
  EXPECT_EQ(r->length, 10u);
  EXPECT_EQ(d.TakeWillNeed(), std::nullopt);
}

TEST(AccessDetectorTest, PendingHintsAreBounded) {
  AccessDetector d;
  const int n = static_cast<int>(AccessDetector::kMaxPendingHints) + 5;
  for (int i = 0; i < n; ++i) d.Hint(HintKind::kDontNeed, i * kMiB, kMiB);
  int taken = 0;
  uint64_t expect = 5 * kMiB;  // the oldest five were dropped
  while (std::optional<ByteRange> r = d.TakeDontNeed()) {
    EXPECT_EQ(r->offset, expect);
    expect += kMiB;
    ++taken;
  }
  EXPECT_EQ(taken, static_cast<int>(AccessDetector::kMaxPendingHints));
}

TEST(AccessDetectorTest, DontNeedIsSurfacedOnceAndRestartsReadAhead) {
  AccessDetector d;
  const uint64_t size = kGiB;
  uint64_t off = 0;
  Decision last;
  for (int i = 0; i < 20; ++i, off += 64 * kKiB) {
    Decision r = d.OnRead(off, 64 * kKiB, size);
    if (r.prefetch_length) last = r;
  }
  ASSERT_GT(last.prefetch_length, 0u);
  // The application drops what was prefetched but not read yet.
  d.Hint(HintKind::kDontNeed, last.prefetch_offset, last.prefetch_length);
  EXPECT_EQ(d.TakeDontNeed(), (ByteRange{last.prefetch_offset, last.prefetch_length}));
  EXPECT_EQ(d.TakeDontNeed(), std::nullopt);
  EXPECT_EQ(d.mode(), AccessMode::kSequential) << "DONTNEED does not change the mode";
  EXPECT_EQ(d.window(), 0u);
  // Those bytes will be needed again: read-ahead restarts at the reader.
  Decision r = d.OnRead(off, 64 * kKiB, size);
  EXPECT_EQ(r.prefetch_offset, off + 64 * kKiB);
  EXPECT_EQ(r.prefetch_length, AccessDetector::Options().initial_window);
}

TEST(AccessDetectorTest, DontNeedBehindTheReaderKeepsTheStream) {
  AccessDetector d;
  uint64_t off = 0;
  for (int i = 0; i < 20; ++i, off += 64 * kKiB) d.OnRead(off, 64 * kKiB, kGiB);
  const uint64_t window = d.window();
  d.Hint(HintKind::kDontNeed, 0, off / 2);  // already consumed
  EXPECT_EQ(d.window(), window);
}

TEST(AccessDetectorTest, AccessPlanSuppressesReadAhead) {
  AccessDetector d;
  uint64_t off = 0;
  for (int i = 0; i < 10; ++i, off += 64 * kKiB) d.OnRead(off, 64 * kKiB, kGiB);
  d.SetPlanActive(true);
  d.Hint(HintKind::kSequential, 0, 0);
  EXPECT_EQ(d.mode(), AccessMode::kAccessPlan) << "an explicit plan outranks hints";
  for (int i = 0; i < 10; ++i, off += 64 * kKiB) {
    Decision r = d.OnRead(off, 64 * kKiB, kGiB);
    EXPECT_EQ(r.mode, AccessMode::kAccessPlan);
    EXPECT_EQ(r.prefetch_length, 0u);
  }
  d.SetPlanActive(false);
  EXPECT_EQ(d.mode(), AccessMode::kSequential);
  EXPECT_GT(d.OnRead(off, 64 * kKiB, kGiB).prefetch_length, 0u);
}

TEST(AccessDetectorTest, ZeroLengthReadChangesNothing) {
  AccessDetector d;
  for (int i = 0; i < 10; ++i) {
    Decision r = d.OnRead(i * kMiB, 0, kGiB);
    EXPECT_EQ(r.mode, AccessMode::kUnknown);
    EXPECT_EQ(r.prefetch_length, 0u);
  }
  EXPECT_EQ(d.mode(), AccessMode::kUnknown);
}

TEST(AccessDetectorTest, OffsetsNearTheTopDoNotWrap) {
  AccessDetector d;
  d.Hint(HintKind::kSequential, 0, 0);
  for (int i = 0; i < 5; ++i) {
    Decision r = d.OnRead(kMax - 4096, 1 << 20, kMax);
    EXPECT_EQ(r.prefetch_length, 0u);  // the read already reaches the top
  }
  Decision r = d.OnRead(kMax - 3 * kMiB, kMiB, kMax);
  EXPECT_LE(r.prefetch_length, kMax - r.prefetch_offset);
}

TEST(AccessDetectorTest, ConcurrentUseIsSafe) {
  AccessDetector d;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&d, t] {
      std::mt19937_64 rng(t);
      for (int i = 0; i < 5000; ++i) {
        switch (rng() % 8) {
          case 0: d.Hint(static_cast<HintKind>(rng() % 5), rng() % kGiB, rng() % kMiB); break;
          case 1: (void)d.TakeWillNeed(); (void)d.TakeDontNeed(); break;
          default: {
            Decision r = d.OnRead(static_cast<uint64_t>(i) * 4096 + t, 4096, kGiB);
            EXPECT_LE(r.prefetch_offset + r.prefetch_length, kGiB);
          }
        }
        (void)d.mode();
        (void)d.window();
      }
    });
  }
  for (std::thread& th : threads) th.join();
}

// --- StrideDetector -------------------------------------------------------

// Feeds reads at `start + k * stride` of `record` bytes and checks that each
// predicted record lies on the stride, ahead of the reader, at most once.
struct StrideRun {
  std::set<uint64_t> predicted;
  int first_prediction_at = -1;  // index of the read that first predicted
  bool duplicate = false;
  bool off_stride = false;
};

StrideRun RunStride(StrideDetector& s, uint64_t start, int64_t stride, uint64_t record, int reads,
                    uint64_t file_size) {
  StrideRun run;
  uint64_t off = start;
  for (int i = 0; i < reads; ++i) {
    for (const ByteRange& r : s.OnRead(off, record, file_size)) {
      if (run.first_prediction_at < 0) run.first_prediction_at = i;
      if (!run.predicted.insert(r.offset).second) run.duplicate = true;
      const int64_t delta = static_cast<int64_t>(r.offset - start);
      if (delta % stride != 0 || r.length != std::min(record, file_size - r.offset)) {
        run.off_stride = true;
      }
    }
    off += static_cast<uint64_t>(stride);
  }
  return run;
}

TEST(StrideDetectorTest, EverySixteenthRecordIsPredicted) {
  StrideDetector s;
  const uint64_t record = 4 * kKiB;
  StrideRun run = RunStride(s, 0, 64 * kKiB, record, 50, kGiB);
  EXPECT_EQ(run.first_prediction_at, 4) << "four matching deltas establish the stride";
  EXPECT_FALSE(run.duplicate);
  EXPECT_FALSE(run.off_stride);
  // Reads 4..49 keep `depth` records ahead: offsets up to (49 + 4) strides.
  EXPECT_EQ(run.predicted.size(), 50u - 4 + 4 - 1);
  EXPECT_EQ(*run.predicted.begin(), 5 * 64 * kKiB);
  EXPECT_EQ(*run.predicted.rbegin(), 53 * 64 * kKiB);
  EXPECT_EQ(s.pattern(), (StrideDetector::Pattern{64 * 1024, record}));
}

TEST(StrideDetectorTest, RecordsAfterAHeaderNeedNotBeAligned) {
  StrideDetector s;
  StrideRun run = RunStride(s, 100, 40 * kKiB + 100, 4000, 30, kGiB);
  EXPECT_GT(run.predicted.size(), 0u);
  EXPECT_FALSE(run.duplicate);
  EXPECT_FALSE(run.off_stride);
}

TEST(StrideDetectorTest, BackwardScanStopsAtZero) {
  StrideDetector s;
  const uint64_t record = 8 * kKiB;
  const uint64_t size = 100 * record;
  StrideRun run = RunStride(s, 99 * record, -static_cast<int64_t>(record), record, 100, size);
  EXPECT_EQ(s.pattern(), (StrideDetector::Pattern{-8 * 1024, record}));
  EXPECT_FALSE(run.duplicate);
  EXPECT_FALSE(run.off_stride);
  EXPECT_EQ(run.predicted.count(0), 1u) << "the first record is predicted";
  EXPECT_EQ(*run.predicted.rbegin(), 94 * record);
}

TEST(StrideDetectorTest, PredictionsStopAtEof) {
  StrideDetector s;
  const uint64_t size = 20 * 64 * kKiB + 1000;  // the last record is short
  StrideRun run = RunStride(s, 0, 64 * kKiB, 4 * kKiB, 30, size);
  EXPECT_FALSE(run.off_stride);
  EXPECT_FALSE(run.duplicate);
  for (uint64_t o : run.predicted) EXPECT_LT(o, size);
  EXPECT_EQ(*run.predicted.rbegin(), 20 * 64 * kKiB);
}

TEST(StrideDetectorTest, ContiguousScanIsLeftToReadAhead) {
  StrideDetector s;
  StrideRun run = RunStride(s, 0, 4 * kKiB, 4 * kKiB, 40, kGiB);
  EXPECT_TRUE(run.predicted.empty());
  run = RunStride(s, 0, 12 * kKiB, 4 * kKiB, 40, kGiB);  // 8 KiB holes: still a scan
  EXPECT_TRUE(run.predicted.empty());
  EXPECT_EQ(s.pattern(), std::nullopt);
}

TEST(StrideDetectorTest, RandomReadsPredictNothing) {
  StrideDetector s;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(s.OnRead((rng() % (kGiB / 4096)) * 4096, 4096, kGiB).empty()) << i;
  }
  EXPECT_EQ(s.pattern(), std::nullopt);
}

TEST(StrideDetectorTest, MixedRecordSizesAreNotAStride) {
  StrideDetector s;
  for (int i = 0; i < 40; ++i) {
    EXPECT_TRUE(s.OnRead(i * 64 * kKiB, (i % 2 ? 4 : 8) * kKiB, kGiB).empty()) << i;
  }
}

// An independent model of the rule StrideDetector documents, written the
// obvious way (every delta counted against every other, history kept in a
// deque): a stride is a delta between reads of the latest read's size that
// more than half of all deltas and at least min_matches of them equal,
// except forward steps within record + sequential_gap; the reader's latest
// step must be that stride; each record is predicted once per pattern, and
// a read off the stride forgets what was predicted.
struct StrideModel {
  StrideDetector::Options o;
  std::deque<std::pair<uint64_t, uint64_t>> reads;  // offset, length
  std::optional<StrideDetector::Pattern> pattern, predicted_for;
  std::optional<uint64_t> last;

  std::optional<StrideDetector::Pattern> Detect() const {
    if (reads.size() < 3) return std::nullopt;
    const uint64_t record = reads.back().second;
    std::vector<int64_t> deltas;
    for (size_t i = 1; i < reads.size(); ++i)
      if (reads[i].second == record && reads[i - 1].second == record)
        deltas.push_back(static_cast<int64_t>(reads[i].first - reads[i - 1].first));
    for (int64_t d : deltas) {
      const size_t n = std::count(deltas.begin(), deltas.end(), d);
      if (d == 0 || n < o.min_matches || 2 * n <= reads.size() - 1) continue;
      if (d > 0 && static_cast<uint64_t>(d) <= record + o.sequential_gap) return std::nullopt;
      return StrideDetector::Pattern{d, record};
    }
    return std::nullopt;
  }

  std::vector<ByteRange> OnRead(uint64_t offset, uint64_t length, uint64_t size) {
    std::vector<ByteRange> out;
    const bool had_prev = !reads.empty();
    const auto prev = had_prev ? reads.back() : std::pair<uint64_t, uint64_t>{0, 0};
    reads.emplace_back(offset, length);
    if (reads.size() > o.history) reads.pop_front();
    pattern = Detect();
    if (!pattern || !had_prev || prev.second != length ||
        static_cast<int64_t>(offset - prev.first) != pattern->stride) {
      last.reset();
      return out;
    }
    if (predicted_for != pattern) last.reset();
    predicted_for = pattern;
    const int64_t s = pattern->stride;
    int64_t at = static_cast<int64_t>(offset);
    for (uint32_t k = 0; k < o.depth; ++k) {
      at += s;
      if (at < 0) break;
      if (static_cast<uint64_t>(at) >= size) {
        if (s > 0) break;
        continue;
      }
      const auto u = static_cast<uint64_t>(at);
      if (last && (s > 0 ? u <= *last : u >= *last)) continue;
      out.push_back({u, std::min(length, size - u)});
      last = u;
    }
    return out;
  }
};

TEST(StrideDetectorTest, AgreesWithAModelOfItsRuleOnMixedReaders) {
  std::mt19937_64 rng(11);
  const uint64_t size = 64 * kMiB;
  size_t predicted = 0, off_pattern = 0;  // the walk must exercise both answers
  for (int trial = 0; trial < 200; ++trial) {
    StrideDetector s;
    StrideModel m;
    uint64_t off = (rng() % 1024) * 4096;
    int64_t stride = int64_t(rng() % 64 + 1) * 4096 * (rng() % 3 == 0 ? -1 : 1);
    uint64_t record = 4096;
    for (int i = 0; i < 300; ++i) {
      switch (rng() % 16) {  // mostly on a stride, with breaks of every kind
        case 0: off = (rng() % (size / 4096)) * 4096; break;  // a jump
        case 1: stride = int64_t(rng() % 64 + 1) * 4096 * (rng() % 3 == 0 ? -1 : 1); break;
        case 2: record = rng() % 2 ? 4096 : 8192; break;
        case 3: stride = int64_t(record) * (rng() % 5); break;  // a scan (or a repeat)
        default: off += static_cast<uint64_t>(stride); break;
      }
      off %= size;
      const std::vector<ByteRange> got = s.OnRead(off, record, size);
      ASSERT_EQ(got, m.OnRead(off, record, size)) << trial << " read " << i;
      ASSERT_EQ(s.pattern(), m.pattern) << trial << " read " << i;
      predicted += got.size();
      off_pattern += !m.pattern;
    }
  }
  EXPECT_GT(predicted, 10000u);
  EXPECT_GT(off_pattern, 5000u);
}

TEST(StrideDetectorTest, JumpAndResumePredictsAfresh) {
  StrideDetector s;
  const uint64_t stride = 32 * kKiB;
  for (int i = 0; i < 20; ++i) s.OnRead(i * stride, 4096, kGiB);
  // One break: no prediction for the read that broke the stride.
  EXPECT_TRUE(s.OnRead(500 * kMiB, 4096, kGiB).empty());
  // Back on the same stride, from an earlier place: predictions resume even
  // though they lie behind what was predicted before.
  std::vector<ByteRange> r = s.OnRead(500 * kMiB + stride, 4096, kGiB);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].offset, 500 * kMiB + 2 * stride);
  EXPECT_EQ(r[3].offset, 500 * kMiB + 5 * stride);
}

}  // namespace
}  // namespace rustfs::client
