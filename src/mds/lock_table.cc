#include "mds/lock_table.h"

#include <algorithm>
#include <tuple>

namespace rustfs::mds {

bool LockTable::Conflicts(const Lock& held, const Lock& want) {
  if (held.flock != want.flock || held.who == want.who) return false;
  if (held.end < want.start || want.end < held.start) return false;
  return held.type == LockType::kWrite || want.type == LockType::kWrite;
}

Status LockTable::Set(uint64_t ino, const Lock& l, Lock* conflict) {
  if (l.start > l.end) return InvalidArgument("lock range ends before it starts");
  std::lock_guard lk(mu_);
  std::vector<Lock>& v = locks_[ino];
  if (l.type != LockType::kUnlock) {
    for (const Lock& h : v)
      if (Conflicts(h, l)) {
        if (conflict) *conflict = h;
        return {Code::kWouldBlock, "lock held by pid " + std::to_string(h.pid)};
      }
  }
  // Cut [start, end] out of the owner's own locks of this kind, keeping the
  // parts outside it.
  std::vector<Lock> out;
  out.reserve(v.size() + 2);
  for (const Lock& h : v) {
    if (!(h.who == l.who && h.flock == l.flock) || h.end < l.start || l.end < h.start) {
      out.push_back(h);
      continue;
    }
    if (h.start < l.start) {
      Lock left = h;
      left.end = l.start - 1;
      out.push_back(left);
    }
    if (h.end > l.end) {
      Lock right = h;
      right.start = l.end + 1;
      out.push_back(right);
    }
  }
  if (l.type != LockType::kUnlock) {
    // Merge with the owner's touching locks of the same type, so a run of
    // adjacent locks becomes one range (what F_GETLK reports on Linux).
    Lock merged = l;
    for (auto it = out.begin(); it != out.end();) {
      const bool same = it->who == l.who && it->flock == l.flock && it->type == l.type;
      const bool touches = (merged.start == 0 || it->end >= merged.start - 1) &&
                           (merged.end == UINT64_MAX || it->start <= merged.end + 1);
      if (same && touches) {
        merged.start = std::min(merged.start, it->start);
        merged.end = std::max(merged.end, it->end);
        it = out.erase(it);
      } else {
        ++it;
      }
    }
    out.push_back(merged);
  }
  if (out.empty()) {
    locks_.erase(ino);
  } else {
    v = std::move(out);
  }
  return Status::Ok();
}

std::optional<Lock> LockTable::Test(uint64_t ino, const Lock& l) {
  std::lock_guard lk(mu_);
  auto it = locks_.find(ino);
  if (it == locks_.end()) return std::nullopt;
  for (const Lock& h : it->second)
    if (Conflicts(h, l)) return h;
  return std::nullopt;
}

void LockTable::DropSession(uint64_t session) {
  std::lock_guard lk(mu_);
  for (auto it = locks_.begin(); it != locks_.end();) {
    std::erase_if(it->second, [&](const Lock& h) { return h.who.session == session; });
    it = it->second.empty() ? locks_.erase(it) : std::next(it);
  }
}

std::vector<Lock> LockTable::Held(uint64_t ino) {
  std::lock_guard lk(mu_);
  auto it = locks_.find(ino);
  if (it == locks_.end()) return {};
  std::vector<Lock> v = it->second;
  std::sort(v.begin(), v.end(), [](const Lock& a, const Lock& b) {
    return std::tie(a.flock, a.who.session, a.who.owner, a.start) <
           std::tie(b.flock, b.who.session, b.who.owner, b.start);
  });
  return v;
}

}  // namespace rustfs::mds
