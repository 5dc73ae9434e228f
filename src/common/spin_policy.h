// Whether to poll for an event (the DSS engine reaping a small batch's io_uring
// completions; an RPC reply, where net/reply_wait.h allows) for a short while
// before going to sleep on it. Polling saves a thread wake-up (30-75 µs of
// latency and CPU in this VM, TARGETS.md) when the event comes within the
// poll, and wastes the whole poll when it does not: under load (a disk
// queue, a busy peer) it does not, and every poll is CPU taken from the
// threads that would make the event happen. So poll only while polling has
// been paying off, and re-learn now and then.
//
// Thread-safe (relaxed atomics: a lost update only shifts the score by one).
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace rustfs {

class SpinPolicy {
 public:
  // Poll now? Yes while the recent polls mostly caught their event; else
  // only one call in kProbeEvery, to notice when they would again.
  bool ShouldSpin() {
    if (score_.load(std::memory_order_relaxed) >= kThreshold) return true;
    return calls_.fetch_add(1, std::memory_order_relaxed) % kProbeEvery == 0;
  }
  // What a poll did: caught its event, or gave up and slept.
  void Record(bool caught) {
    int s = score_.load(std::memory_order_relaxed);
    s = caught ? std::min(s + 1, kMax) : std::max(s - 2, 0);
    score_.store(s, std::memory_order_relaxed);
  }
  // Polls `caught` (a cheap, non-blocking check) for up to `budget` if
  // ShouldSpin, and records the outcome. Returns whether it caught the event.
  // It yields the CPU between polls: on a host with fewer cores than busy
  // threads (two vCPUs carry the client, the servers and their I/O threads)
  // a poller that keeps its core starves the very thread that would make the
  // event happen, and psync x 4 fell from 17-18 K to 14-15 K reads/s; with
  // nothing else runnable sched_yield returns at once (a 0.3 µs syscall here)
  // and the poll still saves the wake-up (QD1 unchanged).
  template <class Caught>
  bool Poll(std::chrono::microseconds budget, Caught caught) {
    if (!ShouldSpin()) return false;
    const auto until = std::chrono::steady_clock::now() + budget;
    do {
      if (caught()) {
        Record(true);
        return true;
      }
      sched_yield();
    } while (std::chrono::steady_clock::now() < until);
    Record(false);
    return false;
  }

 private:
  static constexpr int kMax = 16;
  static constexpr int kThreshold = 8;
  static constexpr uint32_t kProbeEvery = 32;
  std::atomic<int> score_{kThreshold};
  std::atomic<uint32_t> calls_{0};
};

}  // namespace rustfs
