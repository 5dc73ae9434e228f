// Status and Result<T>: the error currency across every module boundary.
// Exceptions never cross a module boundary; a function that can fail returns
// Status (no value) or Result<T> (a value or a Status).
#pragma once

#include <cerrno>
#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace rustfs {

// The numbers are part of the wire protocol (RpcHeader.code,
// SegmentResult.code): never renumber, only append. Peers convert with
// net::ToWire/FromWire (net/wire_status.h, pinned as rustfs.proto's
// StatusCode), never with a cast.
enum class Code : int {
  kOk = 0,
  kInvalidArgument = 1,  // bad input from a caller, a config file or an RPC frame
  kNotFound = 2,         // ENOENT
  kAlreadyExists = 3,    // EEXIST
  kNotDirectory = 4,     // ENOTDIR
  kIsDirectory = 5,      // EISDIR
  kNotEmpty = 6,         // ENOTEMPTY
  kNoSpace = 7,          // ENOSPC
  kIoError = 8,          // EIO: disk or unexpected system error
  kCorruption = 9,       // checksum mismatch; data must not be returned
  kUnavailable = 10,     // peer down / connection lost; the caller may fail over
  kStale = 11,           // a version or map the caller holds is out of date
  kPermission = 12,      // EACCES
  kNameTooLong = 13,     // ENAMETOOLONG
  kRetry = 14,           // not done, do it again shortly (e.g. MDS grace period)
  kInternal = 15,        // a bug
  kNotPermitted = 16,    // EPERM: the operation is not allowed on this object
  kWouldBlock = 17,      // EAGAIN: a lock is held by someone else
  kNoData = 18,          // ENODATA: no such extended attribute
  kRange = 19,           // ERANGE: a name or buffer of the wrong size
  kNotSupported = 20,    // EOPNOTSUPP
  kTooManyLinks = 21,    // EMLINK
  kTooBig = 22,          // EFBIG / E2BIG: a size beyond what the object can hold
  kShortRead = 23,       // a peer returned fewer bytes than asked (not a message to match)
  kInterrupted = 24,     // EINTR: the caller gave up waiting (a signal)
};


class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string msg) : code_(code), msg_(std::move(msg)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return msg_; }
  std::string ToString() const;
  // The errno a POSIX caller (the FUSE daemon) should see for this status.
  int ToErrno() const;

  // Builds a status from an errno value, naming what failed.
  static Status FromErrno(int err, std::string_view what);

 private:
  Code code_ = Code::kOk;
  std::string msg_;
};

inline Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status IoError(std::string m) { return {Code::kIoError, std::move(m)}; }
inline Status Corruption(std::string m) { return {Code::kCorruption, std::move(m)}; }
inline Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

// A code as sent on the wire, and back. An unknown number (a newer peer)
// is an error of its own, never a silently wrong code.

template <class T>
using Result = std::expected<T, Status>;

// Lets `return Err(status);` read naturally in functions returning Result<T>.
inline std::unexpected<Status> Err(Status s) { return std::unexpected<Status>(std::move(s)); }

}  // namespace rustfs

// Propagate a failing Status from an expression returning Status.
#define RUSTFS_RETURN_IF_ERROR(expr)        \
  do {                                      \
    ::rustfs::Status _st = (expr);          \
    if (!_st.ok()) return _st;              \
  } while (0)

// The same, in a function returning Result<T>.
#define RUSTFS_RETURN_ERR(expr)                             \
  do {                                                      \
    ::rustfs::Status _st = (expr);                          \
    if (!_st.ok()) return ::rustfs::Err(std::move(_st));    \
  } while (0)
