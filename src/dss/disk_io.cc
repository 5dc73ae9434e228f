#include "dss/disk_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>

namespace rustfs::dss {

namespace {

class RealDiskIo : public DiskIo {
 public:
  Status Write(int fd, const void* buf, size_t len, off_t off, const std::string& what) override {
    auto* p = static_cast<const char*>(buf);
    while (len > 0) {
      ssize_t n = ::pwrite(fd, p, len, off);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "write " + what);
      }
      p += n;
      len -= size_t(n);
      off += n;
    }
    return Status::Ok();
  }

  Status Read(int fd, void* buf, size_t len, off_t off, const std::string& what) override {
    auto* p = static_cast<char*>(buf);
    while (len > 0) {
      ssize_t n = ::pread(fd, p, len, off);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "read " + what);
      }
      if (n == 0) return Status(Code::kShortRead, "short read of " + what);
      p += n;
      len -= size_t(n);
      off += n;
    }
    return Status::Ok();
  }

  Status Copy(int src_fd, off_t src_off, int dst_fd, off_t dst_off, size_t len) override {
    loff_t in = src_off, out = dst_off;
    while (len > 0) {
      ssize_t n = ::copy_file_range(src_fd, &in, dst_fd, &out, len, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "copy base version");
      }
      if (n == 0) return Status(Code::kShortRead, "short copy of the base version");
      len -= size_t(n);
    }
    return Status::Ok();
  }

  Status Sync(int fd, const std::string& what) override {
    if (::fdatasync(fd) < 0) return Status::FromErrno(errno, "sync " + what);
    return Status::Ok();
  }
};

const char* OpName(FaultyDiskIo::Op op) {
  switch (op) {
    case FaultyDiskIo::Op::kWrite: return "write";
    case FaultyDiskIo::Op::kRead: return "read";
    case FaultyDiskIo::Op::kCopy: return "copy";
    case FaultyDiskIo::Op::kSync: return "sync";
  }
  return "?";
}

}  // namespace

DiskIo& DiskIo::Real() {
  static RealDiskIo real;
  return real;
}

void FaultyDiskIo::Fail(Op op, Code code, int after, int count) {
  std::lock_guard lk(mu_);
  armed_[int(op)] = {after, count, code};
  any_armed_ = true;
}

void FaultyDiskIo::FlipOnRead(int count) { flips_ = count; }

void FaultyDiskIo::Clear() {
  std::lock_guard lk(mu_);
  for (auto& a : armed_) a = {};
  flips_ = 0;
  any_armed_ = false;
}

bool FaultyDiskIo::Inject(Op op, Status* out) {
  calls_[int(op)]++;
  if (!any_armed_) return false;
  std::lock_guard lk(mu_);
  Armed& a = armed_[int(op)];
  if (a.count == 0) return false;
  if (a.after > 0) {
    a.after--;
    return false;
  }
  a.count--;
  *out = Status(a.code, std::string("injected ") + OpName(op) + " failure");
  return true;
}

Status FaultyDiskIo::Write(int fd, const void* buf, size_t len, off_t off, const std::string& what) {
  Status s;
  if (Inject(Op::kWrite, &s)) return s;
  return base_.Write(fd, buf, len, off, what);
}

Status FaultyDiskIo::Read(int fd, void* buf, size_t len, off_t off, const std::string& what) {
  Status s;
  if (Inject(Op::kRead, &s)) return s;
  s = base_.Read(fd, buf, len, off, what);
  if (s.ok() && len > 0 && flips_.load() > 0 && flips_.fetch_sub(1) > 0) static_cast<char*>(buf)[0] ^= 0x10;
  return s;
}

Status FaultyDiskIo::Copy(int src_fd, off_t src_off, int dst_fd, off_t dst_off, size_t len) {
  Status s;
  if (Inject(Op::kCopy, &s)) return s;
  return base_.Copy(src_fd, src_off, dst_fd, dst_off, len);
}

Status FaultyDiskIo::Sync(int fd, const std::string& what) {
  Status s;
  if (Inject(Op::kSync, &s)) return s;
  return base_.Sync(fd, what);
}

}  // namespace rustfs::dss
