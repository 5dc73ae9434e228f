// Work a thread can do while one of its calls waits for a reply.
//
// A FUSE-over-io_uring queue thread serves its CPU's reads as one batch and
// waits for that batch's replies; a read the kernel hands its queue
// meanwhile would wait for the whole batch (psync x 4 on 2 CPUs: 2 reads in
// flight, not 4). With a hook installed, the wait also watches the hook's
// fd and runs the hook when it is readable: the thread starts the new reads
// (a nested batch) instead of sleeping through them, and comes back to its
// own reply afterwards. No thread is woken to hand the reads over.
//
// Only waits inside a WaitWindow run the hook: the code that opens one
// promises that nested work cannot deadlock on what it holds (the EC
// reader's fast path, whose caller holds only the file's map lock, which
// nested reads only ever try-lock). The hook never runs inside itself.
//
// Everything here is per thread; nothing is shared.
#pragma once

namespace rustfs::net {

class WaitHook {
 public:
  virtual ~WaitHook() = default;
  // Readable (POLLIN) when there may be work; polled beside the socket.
  virtual int fd() const = 0;
  // A cheap, non-blocking check for work (polled while polling for a reply,
  // and checked when the fd wakes a wait, which may have been for the
  // socket alone).
  virtual bool Pending() = 0;
  // Does the work. It may wait for calls of its own (the hook is not
  // re-entered then).
  virtual void Run() = 0;
};

// Installs `hook` (not owned; it must outlive the guard) on this thread.
class ScopedWaitHook {
 public:
  explicit ScopedWaitHook(WaitHook* hook);
  ~ScopedWaitHook();
  ScopedWaitHook(const ScopedWaitHook&) = delete;
  ScopedWaitHook& operator=(const ScopedWaitHook&) = delete;

 private:
  WaitHook* prev_;
};

// While one lives on a thread, that thread's waits may run its hook.
class WaitWindow {
 public:
  WaitWindow();
  ~WaitWindow() { Close(); }
  // Ends the window before the guard goes (idempotent).
  void Close();
  WaitWindow(const WaitWindow&) = delete;
  WaitWindow& operator=(const WaitWindow&) = delete;

 private:
  bool open_ = true;
};

// The hook a wait on this thread may run now: installed, inside a
// WaitWindow and not already running; else nullptr.
WaitHook* ActiveWaitHook();
// Runs `hook` (ActiveWaitHook()'s) with re-entry blocked.
void RunWaitHook(WaitHook& hook);

}  // namespace rustfs::net
