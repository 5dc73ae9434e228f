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

enum class Code : int {
  kOk = 0,
  kInvalidArgument,  // bad input from a caller, a config file or an RPC frame
  kNotFound,         // ENOENT
  kAlreadyExists,    // EEXIST
  kNotDirectory,     // ENOTDIR
  kIsDirectory,      // EISDIR
  kNotEmpty,         // ENOTEMPTY
  kNoSpace,          // ENOSPC
  kIoError,          // EIO: disk or unexpected system error
  kCorruption,       // checksum mismatch; data must not be returned
  kUnavailable,      // peer down / connection lost; the caller may fail over
  kStale,            // a version or map the caller holds is out of date
  kPermission,       // EACCES / EPERM
  kNameTooLong,      // ENAMETOOLONG
  kRetry,            // not done, do it again shortly (e.g. MDS grace period)
  kInternal,         // a bug
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
