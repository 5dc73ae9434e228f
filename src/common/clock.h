// Time stamps used across modules: the steady clock for intervals and
// deadlines, the real-time clock for file times (ns since the epoch); and
// steady time behind an interface (Clock), so code that waits out leases
// and deadlines is tested with a FakeClock instead of sleeping.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <thread>

namespace rustfs {

// Steady time and waiting on it. Implementations are thread-safe.
class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual time_point Now() const = 0;
  // Returns at `t` or later.
  virtual void SleepUntil(time_point t) = 0;
};

// std::chrono::steady_clock. The process's one instance; never destroyed.
Clock& SteadyClock();

// Time that moves only when told to (Advance) or when something sleeps on
// it: SleepUntil jumps to its deadline at once. For tests.
class FakeClock final : public Clock {
 public:
  time_point Now() const override { return time_point(std::chrono::nanoseconds(ns_.load())); }
  void SleepUntil(time_point t) override {
    const int64_t want = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    int64_t cur = ns_.load();
    while (cur < want && !ns_.compare_exchange_weak(cur, want)) {
    }
  }
  void Advance(std::chrono::nanoseconds d) { ns_.fetch_add(d.count()); }

 private:
  std::atomic<int64_t> ns_{int64_t(1) << 40};  // well past zero, like a machine's uptime
};

inline int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
inline int64_t SteadyNowUs() { return SteadyNowNs() / 1000; }

inline int64_t RealtimeNowNs() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

}  // namespace rustfs
