// Byte-size parsing and formatting ("64KiB", "4MiB", "8GiB").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace rustfs {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;

// Parses a binary size: a non-negative integer followed by an optional unit
// B, KiB, MiB, GiB or TiB (case-sensitive, no space required, one space
// allowed). Decimal units ("64KB", "1GB", "1k") are refused on purpose: they
// are ambiguous, and a stripe unit of 64000 bytes is not what anyone means.
// Overflow, fractions, signs and empty strings are refused.
Result<uint64_t> ParseByteSize(std::string_view text);

// "65536" -> "64KiB" when exact, else plain bytes ("1000B").
std::string FormatByteSize(uint64_t bytes);

}  // namespace rustfs
