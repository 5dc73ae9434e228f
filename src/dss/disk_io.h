// The DSS's file I/O on already-open data files, behind an interface so
// tests can put faults under a real ShardStore (LevelDB's Env is the
// model): DiskIo::Real() is the system; FaultyDiskIo (below) wraps it and
// fails writes, syncs or copies, reports a full disk, or flips bits in
// what reads return, on command. The io_uring engine's reads do not go
// through it; a store opened without an engine reads through it entirely.
//
// Thread-safe: Real() is stateless; FaultyDiskIo takes a lock per call.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "common/status.h"

namespace rustfs::dss {

class DiskIo {
 public:
  virtual ~DiskIo() = default;
  // Whole-buffer pwrite / pread at `off` (retrying EINTR and short
  // transfers); `what` names the file in errors. A read past the end is
  // Code::kShortRead.
  virtual Status Write(int fd, const void* buf, size_t len, off_t off, const std::string& what) = 0;
  virtual Status Read(int fd, void* buf, size_t len, off_t off, const std::string& what) = 0;
  // [src_off, src_off + len) of src_fd to dst_off of dst_fd, in the kernel.
  virtual Status Copy(int src_fd, off_t src_off, int dst_fd, off_t dst_off, size_t len) = 0;
  // fdatasync.
  virtual Status Sync(int fd, const std::string& what) = 0;

  // The system's (a process-wide instance).
  static DiskIo& Real();
};

// Faults on command, over the real calls. Each "fail" is one-shot per
// arming call unless `sticky`.
class FaultyDiskIo : public DiskIo {
 public:
  explicit FaultyDiskIo(DiskIo& base = DiskIo::Real()) : base_(base) {}

  enum class Op { kWrite, kRead, kCopy, kSync };
  // The next `count` calls of `op` fail with `code` (kIoError, kNoSpace...)
  // after `after` more calls of it succeed.
  void Fail(Op op, Code code, int after = 0, int count = 1);
  // Reads flip one bit of the first byte they return, `count` times.
  void FlipOnRead(int count = 1);
  void Clear();
  int calls(Op op) const { return calls_[int(op)].load(); }

  Status Write(int fd, const void* buf, size_t len, off_t off, const std::string& what) override;
  Status Read(int fd, void* buf, size_t len, off_t off, const std::string& what) override;
  Status Copy(int src_fd, off_t src_off, int dst_fd, off_t dst_off, size_t len) override;
  Status Sync(int fd, const std::string& what) override;

 private:
  // A failure to inject into this call of `op`, if one is armed.
  bool Inject(Op op, Status* out);

  DiskIo& base_;
  struct Armed {
    int after = 0, count = 0;
    Code code = Code::kIoError;
  };
  std::atomic<int> calls_[4] = {};
  std::atomic<int> flips_{0};
  Armed armed_[4];
  std::atomic<bool> any_armed_{false};
  mutable std::mutex mu_;
};

}  // namespace rustfs::dss
