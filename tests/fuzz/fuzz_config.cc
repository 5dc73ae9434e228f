// libFuzzer: config text. ParseConfig refuses or accepts; what it accepts
// must survive the round trip `rustfs cluster up` relies on:
// ParseConfig(ConfigToToml(c)) == c.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = rustfs::ParseConfig(text, "fuzz");
  if (!c) return 0;
  auto again = rustfs::ParseConfig(rustfs::ConfigToToml(*c), "round trip");
  if (!again || !(*again == *c)) std::abort();
  return 0;
}
