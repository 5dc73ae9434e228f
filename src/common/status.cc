#include "common/status.h"

#include <cstring>

namespace rustfs {

namespace {
const char* CodeName(Code c) {
  switch (c) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kNotFound: return "NotFound";
    case Code::kAlreadyExists: return "AlreadyExists";
    case Code::kNotDirectory: return "NotDirectory";
    case Code::kIsDirectory: return "IsDirectory";
    case Code::kNotEmpty: return "NotEmpty";
    case Code::kNoSpace: return "NoSpace";
    case Code::kIoError: return "IoError";
    case Code::kCorruption: return "Corruption";
    case Code::kUnavailable: return "Unavailable";
    case Code::kStale: return "Stale";
    case Code::kPermission: return "Permission";
    case Code::kNameTooLong: return "NameTooLong";
    case Code::kRetry: return "Retry";
    case Code::kInternal: return "Internal";
  }
  return "Unknown";
}
}  // namespace

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + msg_;
}

int Status::ToErrno() const {
  switch (code_) {
    case Code::kOk: return 0;
    case Code::kInvalidArgument: return EINVAL;
    case Code::kNotFound: return ENOENT;
    case Code::kAlreadyExists: return EEXIST;
    case Code::kNotDirectory: return ENOTDIR;
    case Code::kIsDirectory: return EISDIR;
    case Code::kNotEmpty: return ENOTEMPTY;
    case Code::kNoSpace: return ENOSPC;
    case Code::kPermission: return EACCES;
    case Code::kStale: return ESTALE;
    case Code::kNameTooLong: return ENAMETOOLONG;
    case Code::kRetry: return EAGAIN;
    default: return EIO;
  }
}

Status Status::FromErrno(int err, std::string_view what) {
  std::string msg = std::string(what) + ": " + std::strerror(err);
  switch (err) {
    case ENOENT: return {Code::kNotFound, msg};
    case EEXIST: return {Code::kAlreadyExists, msg};
    case ENOSPC:
    case EDQUOT: return {Code::kNoSpace, msg};
    case EINVAL: return {Code::kInvalidArgument, msg};
    case EACCES:
    case EPERM: return {Code::kPermission, msg};
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE:
    case ETIMEDOUT: return {Code::kUnavailable, msg};
    default: return {Code::kIoError, msg};
  }
}

}  // namespace rustfs
