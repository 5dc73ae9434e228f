// RPC framing, shared by server and client.
//
// A frame on the wire (little endian):
//   u32 magic "RFS1" | u32 header_len | u64 payload_len | RpcHeader | payload
// The header is a protobuf RpcHeader (ids, method, status, typed body); the
// payload is raw bytes (shard data) so data is never copied into protobuf.
// Frames above the limits below are refused: the receiver closes the
// connection, because it can no longer find the next frame boundary.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "common/units.h"
#include "rustfs.pb.h"

namespace rustfs::net {

inline constexpr uint32_t kFrameMagic = 0x31534652;  // "RFS1"
inline constexpr size_t kPrefixBytes = 16;
inline constexpr uint32_t kMaxHeaderBytes = 16 * kMiB;  // a chunk map of ~500K chunks
inline constexpr uint64_t kMaxPayloadBytes = 64 * kMiB;

struct FramePrefix {
  uint32_t header_len = 0;
  uint64_t payload_len = 0;
};

void EncodePrefix(const FramePrefix& p, uint8_t out[kPrefixBytes]);
// Refuses a wrong magic or a length above the limits.
Result<FramePrefix> DecodePrefix(const uint8_t in[kPrefixBytes]);

// What a handler returns and a caller receives.
struct RpcReply {
  std::string body;     // serialized reply message
  std::string payload;  // raw bytes
};

// Parses a serialized message, naming `what` in the error.
template <class Msg>
Result<Msg> ParseBody(const std::string& body, const char* what) {
  Msg m;
  if (!m.ParseFromString(body)) return Err(InvalidArgument(std::string("malformed ") + what));
  return m;
}

}  // namespace rustfs::net
