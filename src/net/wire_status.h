// rustfs::Code <-> the wire's pb::StatusCode (rustfs.proto), the one place
// the two meet: RpcHeader.code and SegmentResult.code are written with
// ToWire and read with FromWire, never with a cast.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace rustfs::net {

int32_t ToWire(Code c);
// The status a peer sent: code and message. A code this build does not know
// (a newer peer, a corrupt frame) is an error of its own (kInternal naming
// the number), never some other status by accident.
Status FromWire(int32_t code, std::string msg);

}  // namespace rustfs::net
