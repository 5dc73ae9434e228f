// A mutex that spins briefly before sleeping (glibc's
// PTHREAD_MUTEX_ADAPTIVE_NP). For locks held for well under a microsecond
// on hot paths (a cache shard during one lookup and a 4 KiB copy): on this
// class of VM a futex sleep + wake-up costs 30-70 µs, far more than waiting
// out the holder, so a plain std::mutex turns rare collisions into p99
// spikes. Satisfies Lockable (use with std::lock_guard).
#pragma once

#include <pthread.h>

namespace rustfs {

class AdaptiveMutex {
 public:
  AdaptiveMutex() {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&m_, &a);
    pthread_mutexattr_destroy(&a);
  }
  ~AdaptiveMutex() { pthread_mutex_destroy(&m_); }
  AdaptiveMutex(const AdaptiveMutex&) = delete;
  AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;

  void lock() { pthread_mutex_lock(&m_); }
  bool try_lock() { return pthread_mutex_trylock(&m_) == 0; }
  void unlock() { pthread_mutex_unlock(&m_); }

 private:
  pthread_mutex_t m_;
};

}  // namespace rustfs
