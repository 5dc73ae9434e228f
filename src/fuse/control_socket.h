// The mount's control socket (AF_UNIX): plans too large for an ioctl
// (include/rustfs/ioctl.h, struct rustfs_control_plan). One plan per
// connection; connections are served one at a time by one thread (a plan
// of a million entries is 16 MiB and is taken in a few tens of ms).
//
// Anyone who can reach the socket may hand in a plan, but only for a file
// open in this mount, and a plan only makes the daemon read ahead what a
// reader of that file will read: it reads nothing to the sender.
#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "client/client.h"

namespace rustfs::fuse {

class ControlSocket {
 public:
  // Listens at `path` (replacing a stale socket file there).
  static Result<std::unique_ptr<ControlSocket>> Start(const std::string& path, client::Client& client);
  ~ControlSocket();  // stops listening and removes the socket file
  const std::string& path() const { return path_; }

 private:
  ControlSocket(std::string path, int fd, client::Client& client)
      : path_(std::move(path)), fd_(fd), client_(client) {}
  void Loop();
  void Serve(int conn);

  const std::string path_;
  const int fd_;
  client::Client& client_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Where a mount's control socket goes: /run/rustfs (root) or the temp dir.
std::string DefaultControlPath();

}  // namespace rustfs::fuse
