// Time stamps used across modules: the steady clock for intervals and
// deadlines, the real-time clock for file times (ns since the epoch).
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>

namespace rustfs {

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
