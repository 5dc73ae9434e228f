#include "net/frame.h"

#include <cstring>

namespace rustfs::net {

namespace {
void Put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = uint8_t(v >> (8 * i));
}
void Put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = uint8_t(v >> (8 * i));
}
uint32_t Get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= uint32_t(p[i]) << (8 * i);
  return v;
}
uint64_t Get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= uint64_t(p[i]) << (8 * i);
  return v;
}
}  // namespace

void EncodePrefix(const FramePrefix& p, uint8_t out[kPrefixBytes]) {
  Put32(out, kFrameMagic);
  Put32(out + 4, p.header_len);
  Put64(out + 8, p.payload_len);
}

Result<FramePrefix> DecodePrefix(const uint8_t in[kPrefixBytes]) {
  if (Get32(in) != kFrameMagic) return Err(InvalidArgument("bad frame magic"));
  FramePrefix p{Get32(in + 4), Get64(in + 8)};
  if (p.header_len == 0 || p.header_len > kMaxHeaderBytes)
    return Err(InvalidArgument("frame header length " + std::to_string(p.header_len) +
                               " out of range"));
  if (p.payload_len > kMaxPayloadBytes)
    return Err(InvalidArgument("frame payload length " + std::to_string(p.payload_len) +
                               " exceeds limit"));
  return p;
}

}  // namespace rustfs::net
