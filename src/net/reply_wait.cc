#include "net/reply_wait.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "common/log.h"

namespace rustfs::net {

bool PollingPays(double syscall_ns) { return syscall_ns <= kPollingPaysUpToNs; }

double MeasureSyscallNs() {
  constexpr int kBatches = 5, kCalls = 64;
  double best = 1e12;
  for (int b = 0; b < kBatches; b++) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; i++) (void)::syscall(SYS_getppid);  // not cached by libc
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - t0;
    best = std::min(best, took.count() / kCalls);
  }
  return best;
}

bool PollForReplies(std::string_view mode) {
  if (mode == "poll") return true;
  if (mode != "auto") return false;
  static const bool pays = [] {
    const double ns = MeasureSyscallNs();
    const bool p = PollingPays(ns);
    LOG_INFO("client.reply_wait = \"auto\": a syscall costs {:.0f} ns here, so replies are {}", ns,
             p ? "polled for before sleeping" : "slept for");
    return p;
  }();
  return pays;
}

}  // namespace rustfs::net
