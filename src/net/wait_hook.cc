#include "net/wait_hook.h"

namespace rustfs::net {
namespace {
thread_local WaitHook* t_hook = nullptr;
thread_local int t_windows = 0;
thread_local bool t_running = false;
}  // namespace

ScopedWaitHook::ScopedWaitHook(WaitHook* hook) : prev_(t_hook) { t_hook = hook; }
ScopedWaitHook::~ScopedWaitHook() { t_hook = prev_; }

WaitWindow::WaitWindow() { ++t_windows; }
void WaitWindow::Close() {
  if (open_) --t_windows;
  open_ = false;
}

WaitHook* ActiveWaitHook() { return t_windows > 0 && !t_running ? t_hook : nullptr; }

void RunWaitHook(WaitHook& hook) {
  t_running = true;
  hook.Run();
  t_running = false;
}

}  // namespace rustfs::net
