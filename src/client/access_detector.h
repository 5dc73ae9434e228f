// Per-open-file access-pattern classification and read-ahead (LLD-002 §1.2,
// §4.4). Pure logic with no I/O: the client feeds it every read and every
// fadvise hint and gets back what, if anything, to prefetch. Keeping it free
// of I/O lets the policy be tested byte for byte without a cluster.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "client/last_reads.h"
#include "common/units.h"

namespace rustfs::client {

// What the client believes the reader of one open file is doing.
enum class AccessMode {
  kUnknown,     // too few reads seen to tell
  kSequential,  // read-ahead engine
  kRandom,      // no prefetch; full chunk map and frequency-based caching
  kAccessPlan,  // the application supplied an explicit plan (§4)
};

// "unknown", "sequential", "random" or "access-plan"; never null.
const char* ModeName(AccessMode mode);

// An fadvise-style hint, as carried by RUSTFS_IOC_FADVISE.
enum class HintKind { kNormal, kSequential, kRandom, kWillNeed, kDontNeed };

// Maps a POSIX_FADV_* value to a hint. POSIX_FADV_NOREUSE and unknown values
// give nullopt: NOREUSE has no meaning for a cache we do not share, and an
// unknown value must be ignored rather than guessed at.
std::optional<HintKind> HintKindFromAdvice(int advice);

// A byte range of the file: [offset, offset + length). length is never 0
// when returned, and offset + length never overflows.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t end() const { return offset + length; }
  bool operator==(const ByteRange&) const = default;
};

// Classifies the reads of one open file and sizes the read-ahead window.
//
// Classification looks at the last `history` reads: a read is sequential when
// it starts within `sequential_gap` bytes of where one of those reads ended
// (or where the current sequential stream stands) and brings bytes beyond
// it. Any remembered read, not only the previous one, because the FUSE
// daemon serves one file's reads on several threads and they arrive slightly
// out of order; for the same reason a remembered read is reclassified as
// sequential when the read it continues arrives after it. The mode becomes
// kSequential when at least 3/4 of the remembered reads are sequential and
// kRandom when at most 1/4 are; in between it keeps what it was, so one
// stray read cannot flip it (hysteresis). The first read counts as
// sequential only if it is at offset 0, as the kernel does.
//
// Read-ahead follows the kernel's async scheme: in kSequential mode the first
// window (`initial_window` bytes) starts where the read ended; when a later
// read crosses into the most recently issued window, the next window is
// issued right after it, twice as large, up to `max_window`. So prefetch
// stays about one window ahead of the reader, each byte of a sequential scan
// is asked for at most once, and nothing is asked for past file_size.
// kRandom (and kUnknown, kAccessPlan) prefetches nothing and resets the
// window.
//
// Hints override detection: kSequential / kRandom pin the mode until kNormal
// returns to detection (the history keeps being updated meanwhile, so
// detection resumes from what was seen). kWillNeed and kDontNeed ranges are
// queued for the caller to take once each.
//
// Thread-safe: every member takes an internal mutex (SetPlanActive only
// when the flag changes).
class AccessDetector {
 public:
  static constexpr uint32_t kMaxHistory = 64;  // Options::history's cap
  struct Options {
    uint32_t history = 8;                   // reads remembered; clamped to [2, 64]
    uint32_t min_samples = 3;               // reads needed before leaving kUnknown
    uint64_t sequential_gap = 16 * kKiB;    // bytes of slack for "starts where the last ended"
    // A read ending at most this many bytes (or one window, if larger)
    // behind the stream was overtaken by reads on other threads: it neither
    // restarts the stream nor fetches anything.
    uint64_t reorder_window = 512 * kKiB;
    uint64_t initial_window = 128 * kKiB;   // first read-ahead window, bytes
    uint64_t max_window = 8 * kMiB;         // read-ahead window cap, bytes (>= initial_window)
  };

  struct Decision {
    AccessMode mode = AccessMode::kUnknown;  // the mode after this read
    uint64_t prefetch_offset = 0;            // bytes
    uint64_t prefetch_length = 0;            // bytes; 0 = nothing to prefetch
    // Will-need or dont-need ranges wait to be taken (TakeWillNeed,
    // TakeDontNeed): a caller need not ask otherwise.
    bool hints = false;
  };

  // Hints queued and not yet taken beyond this many drop the oldest: a hint
  // is advice, and a caller that never drains must not grow memory.
  static constexpr size_t kMaxPendingHints = 16;

  AccessDetector() : AccessDetector(Options()) {}
  explicit AccessDetector(Options options);

  // Records a read of [offset, offset + length) of a file currently
  // file_size bytes long, and says what to prefetch next. A zero-length read
  // changes nothing.
  Decision OnRead(uint64_t offset, uint64_t length, uint64_t file_size);

  // Applies a hint. offset/length matter only for kWillNeed and kDontNeed
  // (like Linux, mode hints apply to the whole file); length 0 means
  // "through end of file", as for posix_fadvise.
  void Hint(HintKind kind, uint64_t offset, uint64_t length);

  // The oldest kWillNeed range not yet taken, once. The range may extend
  // past the end of the file (length 0 hints come back reaching to
  // UINT64_MAX): clamp it to the file size before fetching.
  std::optional<ByteRange> TakeWillNeed();

  // The oldest kDontNeed range not yet taken, once: the caller drops cached
  // grains inside it. Same convention for ranges as TakeWillNeed.
  std::optional<ByteRange> TakeDontNeed();

  // While an explicit access plan drives prefetching, mode() is kAccessPlan
  // and OnRead prefetches nothing, so the two do not fetch the same bytes.
  void SetPlanActive(bool active);

  // The effective mode: plan, else pinned hint, else detected.
  AccessMode mode() const;

  // The size of the most recently issued read-ahead window in bytes; 0 when
  // no sequential stream is being followed.
  uint64_t window() const;

 private:
  // One remembered read; `sequential` may turn true later (see above).
  struct Seen {
    uint64_t offset;
    uint64_t end;
    bool sequential;
  };

  bool FollowsLocked(uint64_t offset, uint64_t end, uint64_t pos) const;
  // Whether [offset, end) is sequential; marks remembered reads it
  // precedes as sequential, and remembers it.
  bool ClassifyAndRecordLocked(uint64_t offset, uint64_t end);
  Decision ObserveLocked(uint64_t offset, uint64_t length, uint64_t file_size);  // OnRead, less `hints`
  void UpdateDetectedLocked();
  AccessMode ModeLocked() const;
  void ResetStreamLocked();
  Decision ReadAheadLocked(uint64_t offset, uint64_t end, uint64_t file_size, bool sequential);
  Decision StartStreamLocked(uint64_t end, uint64_t file_size);
  Decision IssueLocked(uint64_t start, uint64_t file_size);
  static void Push(std::deque<ByteRange>& q, ByteRange r);
  static std::optional<ByteRange> Pop(std::deque<ByteRange>& q);

  const Options opt_;
  mutable std::mutex mu_;

  // Classification: the last opt_.history reads.
  LastReads<Seen, kMaxHistory> seen_{opt_.history};
  AccessMode detected_ = AccessMode::kUnknown;
  std::optional<AccessMode> pinned_;  // kSequential or kRandom
  // Atomic so that SetPlanActive, called on every read, needs no lock when
  // nothing changes; written under mu_.
  std::atomic<bool> plan_active_{false};

  // The sequential stream being read ahead of, if any.
  bool stream_ = false;
  uint64_t stream_pos_ = 0;      // furthest end read within the stream
  uint64_t prefetched_end_ = 0;  // end of the last issued window
  uint64_t trigger_ = 0;         // start of the last issued window
  uint64_t window_ = 0;          // size of the last issued window

  std::deque<ByteRange> will_need_;
  std::deque<ByteRange> dont_need_;
};

// Stride detection for "strided random, fixed-size records" (LLD-002 §4.4):
// a reader that reads records of one size at offsets a fixed distance apart
// (every k-th record, or a backwards scan) looks random to AccessDetector
// but is perfectly predictable. Kept apart from AccessDetector so that the
// read-ahead policy stays simple and the heuristic can be switched off
// (access_plan.auto_detect) without touching it.
//
// Over the last `history` reads it builds a histogram of offset deltas; when
// one delta (the stride) accounts for a majority of them and at least
// `min_matches`, the reads it connects all had the current read's length
// (the record size), and the latest read followed the stride too, it
// predicts the next `depth` records along the stride. Each record is
// predicted once while the pattern holds. Forward strides within
// `sequential_gap` of the record size (a scan, contiguous or with small
// holes) are left to AccessDetector's read-ahead. Offsets need not be
// multiples of the record size: formats with a header put records at
// header + k * size.
//
// Thread-safe: every member takes an internal mutex.
class StrideDetector {
 public:
  static constexpr uint32_t kMaxHistory = 64;  // Options::history's cap
  struct Options {
    uint32_t history = 16;     // reads remembered; clamped to [3, kMaxHistory]
    uint32_t min_matches = 4;  // deltas equal to the stride needed to trust it
    uint32_t depth = 4;        // records predicted ahead of the reader
    // Forward strides leaving gaps up to this many bytes between records are
    // left to read-ahead, which fetches those bytes anyway.
    uint64_t sequential_gap = 16 * kKiB;
  };

  StrideDetector() : StrideDetector(Options()) {}
  explicit StrideDetector(Options options);

  // Records a read and returns the records to prefetch now (possibly none),
  // nearest first, each inside [0, file_size).
  std::vector<ByteRange> OnRead(uint64_t offset, uint64_t length, uint64_t file_size);

  // The detected stride in bytes (negative = backwards) and record size, or
  // nullopt when no stride is established.
  struct Pattern {
    int64_t stride = 0;
    uint64_t record_size = 0;
    bool operator==(const Pattern&) const = default;
  };
  std::optional<Pattern> pattern() const;

 private:
  struct Read {
    uint64_t offset;
    uint64_t length;
  };

  // Whether `stride` between reads of `record` bytes is the pattern of the
  // remembered reads: the one rule, used by OnRead (for the latest delta)
  // and by pattern() (for the majority delta).
  bool IsPatternLocked(int64_t stride, uint64_t record) const;
  std::optional<Pattern> DetectLocked() const;

  const Options opt_;
  mutable std::mutex mu_;
  // The last opt_.history reads.
  LastReads<Read, kMaxHistory> reads_{opt_.history};
  // Offset of the furthest record predicted along `predicted_for_`; cleared
  // whenever a read breaks the stride, so a reader that jumps and resumes
  // the same stride elsewhere gets fresh predictions.
  std::optional<uint64_t> last_predicted_;
  std::optional<Pattern> predicted_for_;
};

}  // namespace rustfs::client
