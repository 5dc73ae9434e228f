// libFuzzer: bytes as they arrive on a server connection. The prefix
// decoder must refuse every size above frame.h's limits (a peer's claimed
// size is believed only within them), and a header that parses must carry
// a status code FromWire turns into some Status without crashing.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "net/frame.h"
#include "net/wire_status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rustfs::net;
  if (size < kPrefixBytes) return 0;
  auto p = DecodePrefix(data);
  if (!p) return 0;
  if (p->header_len > kMaxHeaderBytes || p->payload_len > kMaxPayloadBytes) std::abort();
  const size_t rest = size - kPrefixBytes;
  if (p->header_len > rest) return 0;
  rustfs::pb::RpcHeader h;
  if (!h.ParseFromArray(data + kPrefixBytes, int(p->header_len))) return 0;
  rustfs::Status s = FromWire(h.code(), h.error());
  if (h.code() == 0 && !s.ok()) std::abort();
  if (!s.ok() && ToWire(s.code()) != h.code() && s.code() != rustfs::Code::kInternal) std::abort();
  return 0;
}
