#include "client/mds_client.h"

#include "rustfs.pb.h"

namespace rustfs::client {

// Read-only calls, and the chunk map's (its effect, an open reference, is a
// set insertion): made twice, they leave the MDS as once.
bool IdempotentMdsMethod(uint32_t method) {
  switch (method) {
    case pb::M_LOOKUP:
    case pb::M_GETATTR:
    case pb::M_READDIR:
    case pb::M_STATFS:
    case pb::M_GET_CHUNK_MAP:
    case pb::M_GETXATTR:
    case pb::M_LISTXATTR:
    case pb::M_GETLK:
    case pb::M_LIST_DSS:
      return true;
    default:
      return false;
  }
}

}  // namespace rustfs::client
