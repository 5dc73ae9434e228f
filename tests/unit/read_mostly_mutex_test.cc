// ReadMostlyMutex against what a reader-writer lock must guarantee: writers
// exclude everyone, readers share, a waiting writer holds new readers back,
// and a try-lock never waits (the nested read of a thread that already holds
// the lock shared, with a writer queued).
#include "common/read_mostly_mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace rustfs {
namespace {

// Waits until `cond` holds, yielding: the tests' steps are ordered by
// what the other thread has visibly done, never by time.
template <typename F>
void AwaitTrue(F cond) {
  while (!cond()) std::this_thread::yield();
}

TEST(ReadMostlyMutex, ReadersShareWritersExclude) {
  ReadMostlyMutex m;
  std::shared_lock r1(m);
  EXPECT_TRUE(m.try_lock_shared());  // a second reader (another "thread" in spirit) gets in
  m.unlock_shared();
  EXPECT_FALSE(m.try_lock());  // not while a reader holds it
  r1.unlock();
  ASSERT_TRUE(m.try_lock());
  EXPECT_FALSE(m.try_lock_shared());
  std::thread other([&] { EXPECT_FALSE(m.try_lock()); });
  other.join();
  m.unlock();
  EXPECT_TRUE(m.try_lock_shared());
  m.unlock_shared();
}

TEST(ReadMostlyMutex, FailedTryLockLetsSleepingReadersIn) {
  ReadMostlyMutex m;
  std::shared_lock held(m);
  EXPECT_FALSE(m.try_lock());
  // The failed try_lock left no flag raised: another thread reads at once.
  std::thread reader([&] {
    std::shared_lock r(m);
    EXPECT_TRUE(r.owns_lock());
  });
  reader.join();
}

TEST(ReadMostlyMutex, WriterWaitsForReadersAndHoldsNewOnesBack) {
  ReadMostlyMutex m;
  std::shared_lock held(m);
  std::atomic<bool> writer_in{false};
  std::thread writer([&] {
    std::unique_lock w(m);
    writer_in = true;
  });
  // The writer has raised its flag when a try-lock from another thread fails
  // while this thread still holds its read lock.
  std::atomic<bool> refused{false};
  std::thread prober([&] {
    AwaitTrue([&] {
      if (!m.try_lock_shared()) return true;
      m.unlock_shared();
      return false;
    });
    refused = true;
  });
  prober.join();
  EXPECT_TRUE(refused);
  EXPECT_FALSE(writer_in);  // it waits for the reader that is still in
  // A nested read of the holding thread: refused, not a deadlock.
  EXPECT_FALSE(m.try_lock_shared());
  // A new reader waits behind the queued writer and gets in after it.
  std::atomic<bool> late_reader_in{false};
  std::thread late([&] {
    std::shared_lock r(m);
    EXPECT_TRUE(writer_in);
    late_reader_in = true;
  });
  held.unlock();
  writer.join();
  late.join();
  EXPECT_TRUE(late_reader_in);
}

// Many threads, mixed: every reader must see both halves of a pair equal
// (writers change them one after the other), and no increment is lost.
TEST(ReadMostlyMutex, StressKeepsInvariant) {
  ReadMostlyMutex m;
  uint64_t a = 0, b = 0;
  std::atomic<uint64_t> bad{0};
  constexpr int kThreads = 6, kIters = 20000;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; t++) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < kIters; i++) {
        if ((i + t) % 16 == 0) {
          std::unique_lock w(m);
          a++;
          b++;
        } else if (i % 3 == 0) {
          if (!m.try_lock_shared()) continue;
          if (a != b) bad++;
          m.unlock_shared();
        } else {
          std::shared_lock r(m);
          if (a != b) bad++;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0u);
  uint64_t writes = 0;
  for (int t = 0; t < kThreads; t++)
    for (int i = 0; i < kIters; i++) writes += (i + t) % 16 == 0;
  EXPECT_EQ(a, writes);
  EXPECT_EQ(b, writes);
}

// Writers queue: each gets the lock alone, in turn, with readers around.
TEST(ReadMostlyMutex, WritersExcludeEachOther) {
  ReadMostlyMutex m;
  int inside = 0, max_inside = 0;
  uint64_t total = 0;
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; t++) {
    ts.emplace_back([&] {
      for (int i = 0; i < 5000; i++) {
        std::unique_lock w(m);
        inside++;
        max_inside = std::max(max_inside, inside);
        total++;
        inside--;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(max_inside, 1);
  EXPECT_EQ(total, 20000u);
}

}  // namespace
}  // namespace rustfs
