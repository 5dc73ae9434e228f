#include "net/wire_status.h"

#include "rustfs.pb.h"

namespace rustfs::net {

int32_t ToWire(Code c) {
  switch (c) {
    case Code::kOk: return pb::S_OK;
    case Code::kInvalidArgument: return pb::S_INVALID_ARGUMENT;
    case Code::kNotFound: return pb::S_NOT_FOUND;
    case Code::kAlreadyExists: return pb::S_ALREADY_EXISTS;
    case Code::kNotDirectory: return pb::S_NOT_DIRECTORY;
    case Code::kIsDirectory: return pb::S_IS_DIRECTORY;
    case Code::kNotEmpty: return pb::S_NOT_EMPTY;
    case Code::kNoSpace: return pb::S_NO_SPACE;
    case Code::kIoError: return pb::S_IO_ERROR;
    case Code::kCorruption: return pb::S_CORRUPTION;
    case Code::kUnavailable: return pb::S_UNAVAILABLE;
    case Code::kStale: return pb::S_STALE;
    case Code::kPermission: return pb::S_PERMISSION;
    case Code::kNameTooLong: return pb::S_NAME_TOO_LONG;
    case Code::kRetry: return pb::S_RETRY;
    case Code::kInternal: return pb::S_INTERNAL;
    case Code::kNotPermitted: return pb::S_NOT_PERMITTED;
    case Code::kWouldBlock: return pb::S_WOULD_BLOCK;
    case Code::kNoData: return pb::S_NO_DATA;
    case Code::kRange: return pb::S_RANGE;
    case Code::kNotSupported: return pb::S_NOT_SUPPORTED;
    case Code::kTooManyLinks: return pb::S_TOO_MANY_LINKS;
    case Code::kTooBig: return pb::S_TOO_BIG;
    case Code::kShortRead: return pb::S_SHORT_READ;
    case Code::kInterrupted: return pb::S_INTERRUPTED;
  }
  return pb::S_INTERNAL;  // unreachable: every Code is listed above
}

Status FromWire(int32_t code, std::string msg) {
  switch (code) {
    case pb::S_OK: return {Code::kOk, std::move(msg)};
    case pb::S_INVALID_ARGUMENT: return {Code::kInvalidArgument, std::move(msg)};
    case pb::S_NOT_FOUND: return {Code::kNotFound, std::move(msg)};
    case pb::S_ALREADY_EXISTS: return {Code::kAlreadyExists, std::move(msg)};
    case pb::S_NOT_DIRECTORY: return {Code::kNotDirectory, std::move(msg)};
    case pb::S_IS_DIRECTORY: return {Code::kIsDirectory, std::move(msg)};
    case pb::S_NOT_EMPTY: return {Code::kNotEmpty, std::move(msg)};
    case pb::S_NO_SPACE: return {Code::kNoSpace, std::move(msg)};
    case pb::S_IO_ERROR: return {Code::kIoError, std::move(msg)};
    case pb::S_CORRUPTION: return {Code::kCorruption, std::move(msg)};
    case pb::S_UNAVAILABLE: return {Code::kUnavailable, std::move(msg)};
    case pb::S_STALE: return {Code::kStale, std::move(msg)};
    case pb::S_PERMISSION: return {Code::kPermission, std::move(msg)};
    case pb::S_NAME_TOO_LONG: return {Code::kNameTooLong, std::move(msg)};
    case pb::S_RETRY: return {Code::kRetry, std::move(msg)};
    case pb::S_INTERNAL: return {Code::kInternal, std::move(msg)};
    case pb::S_NOT_PERMITTED: return {Code::kNotPermitted, std::move(msg)};
    case pb::S_WOULD_BLOCK: return {Code::kWouldBlock, std::move(msg)};
    case pb::S_NO_DATA: return {Code::kNoData, std::move(msg)};
    case pb::S_RANGE: return {Code::kRange, std::move(msg)};
    case pb::S_NOT_SUPPORTED: return {Code::kNotSupported, std::move(msg)};
    case pb::S_TOO_MANY_LINKS: return {Code::kTooManyLinks, std::move(msg)};
    case pb::S_TOO_BIG: return {Code::kTooBig, std::move(msg)};
    case pb::S_SHORT_READ: return {Code::kShortRead, std::move(msg)};
    case pb::S_INTERRUPTED: return {Code::kInterrupted, std::move(msg)};
    default:
      return {Code::kInternal, "peer sent unknown status code " + std::to_string(code) + ": " + msg};
  }
}

}  // namespace rustfs::net
