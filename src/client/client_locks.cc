// Client: advisory locks (fcntl byte ranges and flock), held by the MDS so
// they hold between processes of one mount and across mounts. A blocking
// request (F_SETLKW, flock without LOCK_NB) polls with a growing pause
// rather than parking an MDS thread; a lock is granted at most ~50 ms after
// it is released.
#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "client/client.h"

namespace rustfs::client {

namespace {

pb::LockReq LockReqOf(uint64_t ino, uint64_t client_id, const LockSpec& l) {
  pb::LockReq r;
  r.set_ino(ino);
  r.set_client_id(client_id);
  r.set_owner(l.owner);
  r.set_pid(l.pid);
  r.set_type(l.type == F_RDLCK ? 0 : l.type == F_WRLCK ? 1 : 2);  // the wire's own numbers
  r.set_start(l.start);
  r.set_end(l.end);
  r.set_flock(l.flock);
  return r;
}

}  // namespace

Status Client::SetLock(uint64_t ino, const LockSpec& l, bool wait,
                       const std::function<bool()>& interrupted) {
  static Counter& waits = GetCounter("client.lock_waits");
  if (l.type != F_RDLCK && l.type != F_WRLCK && l.type != F_UNLCK)
    return InvalidArgument("lock type " + std::to_string(l.type));
  const std::tuple<uint64_t, uint64_t, bool> key{ino, l.owner, l.flock};
  if (l.type != F_UNLCK) {  // recorded before asking: a close racing with the grant releases it
    std::lock_guard lk(locks_mu_);
    lock_owners_.insert(key);
  }
  auto pause = std::chrono::milliseconds(1);
  for (bool counted = false;;) {
    auto r = mds_.Call<pb::LockReply>(pb::M_SETLK, LockReqOf(ino, client_id_, l));
    if (r) return Status::Ok();
    if (r.error().code() != Code::kWouldBlock || !wait) return r.error();
    if (!counted) waits.Inc(), counted = true;
    if (interrupted && interrupted()) return {Code::kInterrupted, "lock wait interrupted"};
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

Result<LockSpec> Client::GetLock(uint64_t ino, const LockSpec& l) {
  auto r = mds_.Call<pb::LockReply>(pb::M_GETLK, LockReqOf(ino, client_id_, l));
  if (!r) return Err(r.error());
  LockSpec out = l;
  out.type = r->type() == 0 ? F_RDLCK : r->type() == 1 ? F_WRLCK : F_UNLCK;
  if (out.type != F_UNLCK) {
    out.start = r->start();
    out.end = r->end();
    out.pid = r->pid();
  }
  return out;
}

Status Client::ReleaseLocks(uint64_t ino, uint64_t owner, bool flock) {
  {
    std::lock_guard lk(locks_mu_);
    if (lock_owners_.erase({ino, owner, flock}) == 0) return Status::Ok();
  }
  LockSpec l;
  l.owner = owner;
  l.type = F_UNLCK;
  l.flock = flock;
  return SetLock(ino, l, /*wait=*/false);
}

}  // namespace rustfs::client
