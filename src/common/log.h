// Logging: spdlog, one logger per process, level from RUSTFS_LOG (info by
// default). Daemons log to stderr; `rustfs cluster up` redirects it to files.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace rustfs {

// Names the process in every line ("mds", "dss-3", "fuse").
void InitLogging(const std::string& process_name);

}  // namespace rustfs

#define LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
#define LOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
