#include "client/mds_client.h"

#include "rustfs.pb.h"

namespace rustfs::client {

// Read-only calls, and those whose effect is a set insertion (an open
// reference, a lease renewal): made twice, they leave the MDS as once.
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
    case pb::M_RENEW_LEASES:
      return true;
    default:
      return false;
  }
}

}  // namespace rustfs::client
