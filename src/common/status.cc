#include "common/status.h"

#include <cstring>
#include <string>

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
    case Code::kNotPermitted: return "NotPermitted";
    case Code::kWouldBlock: return "WouldBlock";
    case Code::kNoData: return "NoData";
    case Code::kRange: return "Range";
    case Code::kNotSupported: return "NotSupported";
    case Code::kTooManyLinks: return "TooManyLinks";
    case Code::kTooBig: return "TooBig";
    case Code::kShortRead: return "ShortRead";
    case Code::kInterrupted: return "Interrupted";
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
    case Code::kNotPermitted: return EPERM;
    case Code::kWouldBlock: return EAGAIN;
    case Code::kNoData: return ENODATA;
    case Code::kRange: return ERANGE;
    case Code::kNotSupported: return EOPNOTSUPP;
    case Code::kTooManyLinks: return EMLINK;
    case Code::kTooBig: return EFBIG;
    case Code::kInterrupted: return EINTR;
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
    case EACCES: return {Code::kPermission, msg};
    case EPERM: return {Code::kNotPermitted, msg};
    case EAGAIN: return {Code::kWouldBlock, msg};
    case ENODATA: return {Code::kNoData, msg};
    case ERANGE: return {Code::kRange, msg};
    case EOPNOTSUPP: return {Code::kNotSupported, msg};
    case EMLINK: return {Code::kTooManyLinks, msg};
    case EFBIG: return {Code::kTooBig, msg};
    case EINTR: return {Code::kInterrupted, msg};
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE:
    case ETIMEDOUT: return {Code::kUnavailable, msg};
    default: return {Code::kIoError, msg};
  }
}

}  // namespace rustfs
