#include "fuse/control_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/fd_io.h"
#include "common/log.h"
#include "rustfs/ioctl.h"

namespace rustfs::fuse {

std::string DefaultControlPath() {
  std::error_code ec;
  std::string dir = "/run/rustfs";
  if (::geteuid() != 0 || (!std::filesystem::create_directories(dir, ec) && ec))
    dir = std::filesystem::temp_directory_path(ec).string();
  return dir + "/fuse-" + std::to_string(::getpid()) + ".sock";
}

Result<std::unique_ptr<ControlSocket>> ControlSocket::Start(const std::string& path, client::Client& client) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return Err(InvalidArgument("control socket path too long: " + path));
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Err(Status::FromErrno(errno, "control socket"));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ::unlink(path.c_str());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 || ::listen(fd, 16) < 0) {
    Status s = Status::FromErrno(errno, "listen on " + path);
    ::close(fd);
    return Err(s);
  }
  ::chmod(path.c_str(), 0666);  // any process reading the mount may hand in a plan
  std::unique_ptr<ControlSocket> cs(new ControlSocket(path, fd, client));
  cs->thread_ = std::thread([p = cs.get()] { p->Loop(); });
  return cs;
}

ControlSocket::~ControlSocket() {
  stop_ = true;
  ::shutdown(fd_, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
  ::unlink(path_.c_str());
}

void ControlSocket::Loop() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;  // wakes now and then to see stop_
    int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) {
      if (errno == EMFILE || errno == ENFILE) ::usleep(10000);  // no busy loop when out of fds
      continue;
    }
    timeval tv{10, 0};  // a sender that stalls mid-plan does not hold the socket
    ::setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    Serve(conn);
    ::close(conn);
  }
}

void ControlSocket::Serve(int conn) {
  static Counter& plans = GetCounter("fuse.control_plans");
  rustfs_control_plan h{};
  int32_t err = EINVAL;
  if (!ReadFull(conn, &h, sizeof h)) return;
  if (h.magic == RUSTFS_CONTROL_MAGIC && h.version == 1 && h.reserved == 0 && h.count > 0 &&
      h.count <= RUSTFS_PLAN_MAX_ENTRIES) {
    std::vector<client::PlanEntry> entries(h.count);
    static_assert(sizeof(client::PlanEntry) == sizeof(rustfs_plan_entry));
    if (!ReadFull(conn, entries.data(), entries.size() * sizeof(rustfs_plan_entry))) return;
    Status s = client_.SubmitPlan(h.ino, std::move(entries), h.depth);
    err = s.ok() ? 0 : s.ToErrno();
    if (s.ok()) plans.Inc();
    else LOG_WARN("control socket: plan for inode {} refused: {}", h.ino, s.ToString());
  }
  (void)::write(conn, &err, sizeof err);
}

}  // namespace rustfs::fuse
