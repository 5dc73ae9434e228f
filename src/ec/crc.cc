#include "ec/crc.h"

#include <isa-l/crc.h>

#include <algorithm>
#include <climits>

namespace rustfs::ec {

uint32_t Crc32c(const void* data, size_t len) {
  // ISA-L's crc32_iscsi is the bare reflected register update: it neither
  // pre- nor post-inverts. The standard CRC-32C starts the register at ~0 and
  // inverts the result; chaining passes the raw register between calls.
  constexpr size_t kMaxPass = size_t{1} << 30;  // the length parameter is an int
  static_assert(kMaxPass <= static_cast<size_t>(INT_MAX));
  // ISA-L never writes through the pointer; its signature just isn't const.
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  uint32_t crc = 0xFFFFFFFFu;
  while (len > 0) {
    const size_t n = std::min(len, kMaxPass);
    crc = crc32_iscsi(p, static_cast<int>(n), crc);
    p += n;
    len -= n;
  }
  return ~crc;
}

}  // namespace rustfs::ec
