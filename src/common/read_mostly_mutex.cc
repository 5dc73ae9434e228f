#include "common/read_mostly_mutex.h"

#include <algorithm>
#include <bit>
#include <thread>

namespace rustfs {

namespace {
// Each thread's slot number, handed out round robin at its first lock: the
// threads of a process spread over the slots, whatever their CPU.
uint32_t ThreadSlotNumber() {
  static std::atomic<uint32_t> next{0};
  thread_local const uint32_t mine = next.fetch_add(1, std::memory_order_relaxed);
  return mine;
}

// One slot per CPU, at most kMaxSlots: every open file has a lock, and a
// slot is a cache line (16 slots: 1 KiB per file). Threads beyond that share
// slots, which costs them only the line they share.
constexpr uint32_t kMaxSlots = 16;

// Asked once: hardware_concurrency() reads sysfs, and files are opened often.
uint32_t SlotCount() {
  static const uint32_t count =
      std::bit_ceil(std::clamp<uint32_t>(std::thread::hardware_concurrency(), 1, kMaxSlots));
  return count;
}
}  // namespace

ReadMostlyMutex::ReadMostlyMutex() : slots_(new Slot[SlotCount()]), mask_(SlotCount() - 1) {}

ReadMostlyMutex::Slot& ReadMostlyMutex::MySlot() { return slots_[ThreadSlotNumber() & mask_]; }

// The reader raises its count, then looks at the flag; the writer raises the
// flag, then looks at the counts (both sequentially consistent): at least
// one of them sees the other, so they never both go in.
bool ReadMostlyMutex::TryEnter(Slot& s) {
  s.readers.fetch_add(1, std::memory_order_seq_cst);
  if (writer_.load(std::memory_order_seq_cst) == 0) return true;
  Leave(s);
  return false;
}

void ReadMostlyMutex::Leave(Slot& s) {
  s.readers.fetch_sub(1, std::memory_order_seq_cst);
  if (writer_.load(std::memory_order_seq_cst) == 0) return;
  // A writer waits for the counts to fall: it read drained_ before looking
  // at them, so this bump ends its wait even if it is about to sleep.
  drained_.fetch_add(1, std::memory_order_seq_cst);
  drained_.notify_one();
}

bool ReadMostlyMutex::try_lock_shared() { return TryEnter(MySlot()); }

void ReadMostlyMutex::lock_shared() {
  Slot& s = MySlot();
  while (!TryEnter(s)) {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    while (writer_.load(std::memory_order_seq_cst) != 0) writer_.wait(1, std::memory_order_seq_cst);
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  }
}

void ReadMostlyMutex::unlock_shared() { Leave(MySlot()); }

bool ReadMostlyMutex::Drained() const {
  for (uint32_t i = 0; i <= mask_; i++)
    if (slots_[i].readers.load(std::memory_order_seq_cst) != 0) return false;
  return true;
}

void ReadMostlyMutex::lock() {
  writers_.lock();
  writer_.store(1, std::memory_order_seq_cst);
  for (;;) {
    const uint32_t seen = drained_.load(std::memory_order_seq_cst);
    if (Drained()) return;
    drained_.wait(seen, std::memory_order_seq_cst);
  }
}

bool ReadMostlyMutex::try_lock() {
  if (!writers_.try_lock()) return false;
  writer_.store(1, std::memory_order_seq_cst);
  if (Drained()) return true;
  WakeReaders();
  writers_.unlock();
  return false;
}

void ReadMostlyMutex::unlock() {
  WakeReaders();
  writers_.unlock();
}

// Lowers the flag. A reader counts itself in sleepers_ before it looks at
// the flag, so one that is about to sleep is either seen here or sees the
// flag down.
void ReadMostlyMutex::WakeReaders() {
  writer_.store(0, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) writer_.notify_all();
}

}  // namespace rustfs
