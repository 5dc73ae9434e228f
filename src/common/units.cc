#include "common/units.h"

#include <array>
#include <charconv>
#include <limits>

namespace rustfs {

namespace {

inline constexpr uint64_t kTiB = 1024 * kGiB;

struct Unit {
  std::string_view name;
  uint64_t bytes;
};

// Largest first, so FormatByteSize picks the shortest exact spelling.
inline constexpr std::array<Unit, 5> kUnits = {{
    {"TiB", kTiB},
    {"GiB", kGiB},
    {"MiB", kMiB},
    {"KiB", kKiB},
    {"B", 1},
}};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

Status SizeError(std::string_view text, std::string_view why) {
  std::string msg = "invalid size \"";
  msg.append(text);
  msg += "\": ";
  msg.append(why);
  return InvalidArgument(std::move(msg));
}

// Names the mistake people actually make, so the message tells them what to
// write instead of only that the text is wrong.
std::string UnknownUnitReason(std::string_view unit) {
  std::string why = "unknown unit '";
  why.append(unit);
  why += "'";
  if (!unit.empty() && unit[0] == '.') {
    why = "fractions are not allowed";
  } else if (unit.size() == 2 && unit[1] == 'B') {
    why += " (decimal units are refused; did you mean '";
    why += unit[0];
    why += "iB'?)";
  }
  return why + "; use B, KiB, MiB, GiB or TiB";
}

}  // namespace

Result<uint64_t> ParseByteSize(std::string_view text) {
  if (text.empty()) return Err(SizeError(text, "empty"));
  if (text[0] == '-') return Err(SizeError(text, "negative sizes are not allowed"));
  if (!IsDigit(text[0])) return Err(SizeError(text, "must start with a digit"));

  uint64_t number = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, number);
  if (ec == std::errc::result_out_of_range) {
    return Err(SizeError(text, "does not fit in 64 bits"));
  }
  std::string_view rest(ptr, static_cast<size_t>(end - ptr));

  // One space between number and unit reads naturally ("64 KiB"); more than
  // one, or a trailing space with no unit, is almost surely a typo.
  if (!rest.empty() && rest[0] == ' ') {
    rest.remove_prefix(1);
    if (rest.empty() || rest[0] == ' ') {
      return Err(SizeError(text, "expected a unit after the space"));
    }
  }
  if (rest.empty()) return number;

  for (const Unit& unit : kUnits) {
    if (rest != unit.name) continue;
    if (number > std::numeric_limits<uint64_t>::max() / unit.bytes) {
      return Err(SizeError(text, "does not fit in 64 bits"));
    }
    return number * unit.bytes;
  }
  return Err(SizeError(text, UnknownUnitReason(rest)));
}

std::string FormatByteSize(uint64_t bytes) {
  for (const Unit& unit : kUnits) {
    if (bytes != 0 && bytes % unit.bytes == 0) {
      return std::to_string(bytes / unit.bytes) + std::string(unit.name);
    }
  }
  return "0B";
}

}  // namespace rustfs
