#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

namespace rustfs {

void InitLogging(const std::string& process_name) {
  auto logger = spdlog::stderr_color_mt(process_name);
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %n %^%l%$ %v");
  const char* lvl = std::getenv("RUSTFS_LOG");
  spdlog::set_level(lvl ? spdlog::level::from_str(lvl) : spdlog::level::info);
  spdlog::flush_on(spdlog::level::warn);
}

}  // namespace rustfs
