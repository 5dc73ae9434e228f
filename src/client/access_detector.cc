#include "client/access_detector.h"

#include <fcntl.h>

#include <algorithm>
#include <limits>

namespace rustfs::client {
namespace {

constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();
// Doubling a window must not overflow; no real window gets near this.
constexpr uint64_t kWindowCap = uint64_t{1} << 62;

// Offsets come from the kernel and from hints; a hostile or buggy caller may
// send values near 2^64, and wrapping would turn "far ahead" into "behind".
uint64_t SatAdd(uint64_t a, uint64_t b) { return a > kMaxU64 - b ? kMaxU64 : a + b; }

AccessDetector::Options Sanitize(AccessDetector::Options o) {
  o.history = std::clamp<uint32_t>(o.history, 2, AccessDetector::kMaxHistory);
  o.min_samples = std::clamp<uint32_t>(o.min_samples, 1, o.history);
  if (o.initial_window == 0) o.initial_window = AccessDetector::Options().initial_window;
  o.initial_window = std::min(o.initial_window, kWindowCap);
  o.max_window = std::clamp(o.max_window, o.initial_window, kWindowCap);
  return o;
}

StrideDetector::Options Sanitize(StrideDetector::Options o) {
  o.history = std::clamp<uint32_t>(o.history, 3, StrideDetector::kMaxHistory);
  o.min_matches = std::clamp<uint32_t>(o.min_matches, 2, o.history - 1);
  o.depth = std::max<uint32_t>(o.depth, 1);
  return o;
}

// A hint's range in ByteRange form: POSIX length 0 means "to end of file",
// which we cannot resolve here, so it reaches as far as representable.
std::optional<ByteRange> HintRange(uint64_t offset, uint64_t length) {
  if (offset == kMaxU64) return std::nullopt;
  const uint64_t room = kMaxU64 - offset;
  return ByteRange{offset, length == 0 ? room : std::min(length, room)};
}

}  // namespace

const char* ModeName(AccessMode mode) {
  switch (mode) {
    case AccessMode::kUnknown: return "unknown";
    case AccessMode::kSequential: return "sequential";
    case AccessMode::kRandom: return "random";
    case AccessMode::kAccessPlan: return "access-plan";
  }
  return "unknown";
}

std::optional<HintKind> HintKindFromAdvice(int advice) {
  switch (advice) {
    case POSIX_FADV_NORMAL: return HintKind::kNormal;
    case POSIX_FADV_SEQUENTIAL: return HintKind::kSequential;
    case POSIX_FADV_RANDOM: return HintKind::kRandom;
    case POSIX_FADV_WILLNEED: return HintKind::kWillNeed;
    case POSIX_FADV_DONTNEED: return HintKind::kDontNeed;
    default: return std::nullopt;  // POSIX_FADV_NOREUSE and anything unknown
  }
}

// ---------------------------------------------------------------------------
// AccessDetector

AccessDetector::AccessDetector(Options options) : opt_(Sanitize(options)) {}

// Evaluated without branches (& of bools): every read tests every
// remembered one, and on a random reader the outcomes are coin flips.
bool AccessDetector::FollowsLocked(uint64_t offset, uint64_t end, uint64_t pos) const {
  return bool(int(end > pos) & int(offset <= SatAdd(pos, opt_.sequential_gap)) &
              int(SatAdd(offset, opt_.sequential_gap) >= pos));
}

bool AccessDetector::ClassifyAndRecordLocked(uint64_t offset, uint64_t end) {
  // The kernel's convention: a first read at the start of the file is the
  // start of a scan.
  bool sequential = seen_.empty() && offset == 0;
  for (size_t i = 0; i < seen_.size(); ++i) {
    Seen& s = seen_[i];
    sequential |= FollowsLocked(offset, end, s.end);
    // A remembered read this one precedes was overtaken by it, not random.
    s.sequential |= FollowsLocked(s.offset, s.end, end);
  }
  // Following the stream counts too, so that the read resuming a scan after
  // a stray read is sequential rather than a second stray.
  sequential |= !seen_.empty() && stream_ && FollowsLocked(offset, end, stream_pos_);
  seen_.Push({offset, end, sequential});
  return sequential;
}

void AccessDetector::UpdateDetectedLocked() {
  const size_t n = seen_.size();
  if (n < opt_.min_samples) return;
  size_t seq = 0;
  for (size_t i = 0; i < n; ++i) seq += seen_[i].sequential;
  if (4 * seq >= 3 * n) {
    detected_ = AccessMode::kSequential;
  } else if (4 * seq <= n) {
    detected_ = AccessMode::kRandom;
  }
  // Otherwise the evidence is mixed: keep the current mode (hysteresis).
}

AccessMode AccessDetector::ModeLocked() const {
  if (plan_active_) return AccessMode::kAccessPlan;
  if (pinned_) return *pinned_;
  return detected_;
}

void AccessDetector::ResetStreamLocked() {
  stream_ = false;
  stream_pos_ = prefetched_end_ = trigger_ = window_ = 0;
}

AccessDetector::Decision AccessDetector::IssueLocked(uint64_t start, uint64_t file_size) {
  // At end of file there is nothing to ask for; the window does not grow
  // either, so a file that is being appended to resumes where it was.
  if (start >= file_size) return {};
  const uint64_t w = window_ == 0 ? opt_.initial_window : std::min(window_ * 2, opt_.max_window);
  const uint64_t end = std::min(SatAdd(start, w), file_size);
  window_ = w;
  trigger_ = start;
  prefetched_end_ = end;
  return {AccessMode::kSequential, start, end - start};
}

AccessDetector::Decision AccessDetector::StartStreamLocked(uint64_t end, uint64_t file_size) {
  stream_ = true;
  stream_pos_ = prefetched_end_ = trigger_ = end;
  window_ = 0;
  return IssueLocked(end, file_size);
}

AccessDetector::Decision AccessDetector::ReadAheadLocked(uint64_t offset, uint64_t end,
                                                         uint64_t file_size, bool sequential) {
  if (stream_) {
    // Behind the stream and close to it: a read another FUSE thread
    // overtook. It must neither restart the stream nor fetch anything.
    if (end <= stream_pos_ && stream_pos_ - end <= std::max(window_, opt_.reorder_window)) {
      return {};
    }
    // Continuing: starts near where the stream stands, or jumps forward but
    // no further than what was prefetched (the reader skipped some bytes).
    const bool continues =
        SatAdd(offset, opt_.sequential_gap) >= stream_pos_ &&
        offset <= std::max(SatAdd(stream_pos_, opt_.sequential_gap), prefetched_end_);
    if (continues) {
      if (end <= stream_pos_) return {};
      stream_pos_ = end;
      // The reader has entered the last window issued: issue the next one
      // now, while it still has that window's worth of bytes to read.
      if (end > trigger_) return IssueLocked(std::max(prefetched_end_, end), file_size);
      return {};
    }
  }
  // Not part of a stream. A sequential read here starts a new one (the
  // reader moved elsewhere and scans on); a stray read does not, unless the
  // application told us the file is read sequentially.
  const bool pinned = pinned_ == AccessMode::kSequential;
  if (sequential || pinned) {
    return StartStreamLocked(end, file_size);
  }
  return {};
}

AccessDetector::Decision AccessDetector::OnRead(uint64_t offset, uint64_t length,
                                                uint64_t file_size) {
  std::lock_guard lock(mu_);
  Decision d = ObserveLocked(offset, length, file_size);
  d.hints = !will_need_.empty() || !dont_need_.empty();
  return d;
}

AccessDetector::Decision AccessDetector::ObserveLocked(uint64_t offset, uint64_t length, uint64_t file_size) {
  if (length == 0) return {ModeLocked(), 0, 0};
  const uint64_t end = SatAdd(offset, length);
  const bool sequential = ClassifyAndRecordLocked(offset, end);
  UpdateDetectedLocked();
  const AccessMode mode = ModeLocked();
  if (mode != AccessMode::kSequential) {
    ResetStreamLocked();
    return {mode, 0, 0};
  }
  Decision d = ReadAheadLocked(offset, end, file_size, sequential);
  d.mode = mode;
  return d;
}

void AccessDetector::Push(std::deque<ByteRange>& q, ByteRange r) {
  q.push_back(r);
  if (q.size() > kMaxPendingHints) q.pop_front();
}

std::optional<ByteRange> AccessDetector::Pop(std::deque<ByteRange>& q) {
  if (q.empty()) return std::nullopt;
  ByteRange r = q.front();
  q.pop_front();
  return r;
}

void AccessDetector::Hint(HintKind kind, uint64_t offset, uint64_t length) {
  std::lock_guard lock(mu_);
  switch (kind) {
    case HintKind::kNormal:
      pinned_.reset();
      break;
    case HintKind::kSequential:
      pinned_ = AccessMode::kSequential;
      break;
    case HintKind::kRandom:
      pinned_ = AccessMode::kRandom;
      ResetStreamLocked();
      break;
    case HintKind::kWillNeed:
      if (auto r = HintRange(offset, length)) Push(will_need_, *r);
      break;
    case HintKind::kDontNeed:
      if (auto r = HintRange(offset, length)) {
        Push(dont_need_, *r);
        // The caller is about to drop prefetched bytes the reader has not
        // reached; the stream would believe them fetched and never ask
        // again, so start it afresh from the reader's next read.
        if (stream_ && r->offset < prefetched_end_ && r->end() > stream_pos_) ResetStreamLocked();
      }
      break;
  }
}

std::optional<ByteRange> AccessDetector::TakeWillNeed() {
  std::lock_guard lock(mu_);
  return Pop(will_need_);
}

std::optional<ByteRange> AccessDetector::TakeDontNeed() {
  std::lock_guard lock(mu_);
  return Pop(dont_need_);
}

void AccessDetector::SetPlanActive(bool active) {
  if (plan_active_.load(std::memory_order_relaxed) == active) return;
  std::lock_guard lock(mu_);
  plan_active_ = active;
  if (active) ResetStreamLocked();
}

AccessMode AccessDetector::mode() const {
  std::lock_guard lock(mu_);
  return ModeLocked();
}

uint64_t AccessDetector::window() const {
  std::lock_guard lock(mu_);
  return stream_ ? window_ : 0;
}

// ---------------------------------------------------------------------------
// StrideDetector

StrideDetector::StrideDetector(Options options) : opt_(Sanitize(options)) {}

bool StrideDetector::IsPatternLocked(int64_t stride, uint64_t record) const {
  // Forward strides that leave gaps smaller than the sequential gap are a
  // scan with holes: read-ahead already fetches those bytes. (Checked first:
  // a scan, the commonest reader, leaves here without looking at history.)
  if (stride == 0 || (stride > 0 && static_cast<uint64_t>(stride) <= SatAdd(record, opt_.sequential_gap)))
    return false;
  const size_t n = reads_.size();
  if (n < 3) return false;
  // Deltas between consecutive reads of exactly the record size; unsigned
  // subtraction reinterpreted as signed gives the backwards strides. The
  // stride must account for more than half of all deltas. Counted without
  // branches: on a random reader every comparison would be a mispredict,
  // and this runs on every read, the cache-hit path included.
  size_t count = 0;
  for (size_t i = 1; i < n; ++i) {
    count += size_t(reads_[i].length == record) & size_t(reads_[i - 1].length == record) &
             size_t(static_cast<int64_t>(reads_[i].offset - reads_[i - 1].offset) == stride);
  }
  return count >= opt_.min_matches && 2 * count > n - 1;
}

std::optional<StrideDetector::Pattern> StrideDetector::DetectLocked() const {
  if (reads_.size() < 3) return std::nullopt;
  const uint64_t record = reads_.newest().length;
  // A pattern's stride is the majority of the deltas: one voting pass finds
  // the only candidate, IsPatternLocked checks it.
  int64_t best = 0;
  size_t votes = 0;
  for (size_t i = 1; i < reads_.size(); ++i) {
    if (reads_[i].length != record || reads_[i - 1].length != record) continue;
    const auto d = static_cast<int64_t>(reads_[i].offset - reads_[i - 1].offset);
    if (votes == 0) best = d;
    votes += d == best ? 1 : size_t(-1);
  }
  if (!IsPatternLocked(best, record)) return std::nullopt;
  return Pattern{best, record};
}

std::vector<ByteRange> StrideDetector::OnRead(uint64_t offset, uint64_t length,
                                              uint64_t file_size) {
  std::lock_guard lock(mu_);
  std::vector<ByteRange> out;
  if (length == 0) return out;
  const bool had_prev = !reads_.empty();
  const Read prev = had_prev ? reads_.newest() : Read{0, 0};
  reads_.Push({offset, length});

  // Predict only while the reader is on the stride right now (the step it
  // just took is the pattern); after a break the next prediction starts
  // from wherever it resumes.
  const auto step_taken = static_cast<int64_t>(offset - prev.offset);
  if (!had_prev || prev.length != length || !IsPatternLocked(step_taken, length)) {
    last_predicted_.reset();
    return out;
  }
  const Pattern p{step_taken, length};
  if (predicted_for_ != p) last_predicted_.reset();
  predicted_for_ = p;
  const int64_t s = p.stride;
  const uint64_t step = s > 0 ? static_cast<uint64_t>(s) : static_cast<uint64_t>(-(s + 1)) + 1;
  uint64_t at = offset;
  for (uint32_t k = 0; k < opt_.depth; ++k) {
    if (s > 0) {
      if (at > kMaxU64 - step) break;
      at += step;
      if (at >= file_size) break;
    } else {
      if (at < step) break;
      at -= step;
      if (at >= file_size) continue;  // the file shrank under us; those records are gone
    }
    const bool fresh = !last_predicted_ || (s > 0 ? at > *last_predicted_ : at < *last_predicted_);
    if (!fresh) continue;
    out.push_back({at, std::min(p.record_size, file_size - at)});
    last_predicted_ = at;
  }
  return out;
}

std::optional<StrideDetector::Pattern> StrideDetector::pattern() const {
  std::lock_guard lock(mu_);
  return DetectLocked();
}

}  // namespace rustfs::client
