// Advisory locks (fcntl byte-range locks and flock), held by the MDS so
// they work between processes of one mount and across mounts: SQLite and
// other databases rely on them (DESIGN.md §7).
//
// An owner is (lease session, the kernel's lock owner id): two processes of
// one mount are different owners, and all of a session's locks go with it
// (DropSession) when its client unmounts or its lease runs out. fcntl and
// flock locks live side by side and never conflict with each other, as on
// Linux. Byte ranges are inclusive [start, end]; end UINT64_MAX means "to
// the end of the file, whatever its size".
//
// Thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace rustfs::mds {

enum class LockType : uint32_t { kRead = 0, kWrite = 1, kUnlock = 2 };  // F_RDLCK, F_WRLCK, F_UNLCK

struct LockOwner {
  uint64_t session = 0;
  uint64_t owner = 0;
  bool operator==(const LockOwner&) const = default;
};

struct Lock {
  LockOwner who;
  uint32_t pid = 0;  // reported by F_GETLK
  LockType type = LockType::kRead;
  uint64_t start = 0;
  uint64_t end = UINT64_MAX;  // inclusive
  bool flock = false;
  bool operator==(const Lock&) const = default;
};

class LockTable {
 public:
  // Takes (kRead/kWrite) or releases (kUnlock) [l.start, l.end] of `ino`
  // for l.who, replacing what l.who held there (POSIX: a lock converts or
  // splits the owner's own locks). kWouldBlock when another owner's lock of
  // the same kind conflicts; *conflict (if given) gets one such lock. A
  // release never fails. InvalidArgument for start > end.
  Status Set(uint64_t ino, const Lock& l, Lock* conflict = nullptr);
  // F_GETLK: a lock of another owner that would block `l`, if any.
  std::optional<Lock> Test(uint64_t ino, const Lock& l);
  // Releases every lock of a session (unmount, lease expiry).
  void DropSession(uint64_t session);
  // The locks held on `ino`, sorted by (kind, owner, start): for tests.
  std::vector<Lock> Held(uint64_t ino);

 private:
  static bool Conflicts(const Lock& held, const Lock& want);
  std::mutex mu_;
  std::unordered_map<uint64_t, std::vector<Lock>> locks_;  // by ino
};

}  // namespace rustfs::mds
