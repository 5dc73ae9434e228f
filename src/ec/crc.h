// CRC32C (Castagnoli, the iSCSI polynomial) over ISA-L's crc32_iscsi.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rustfs::ec {

// Standard CRC32C: Crc32c("123456789", 9) == 0xE3069283.
uint32_t Crc32c(const void* data, size_t len);

}  // namespace rustfs::ec
