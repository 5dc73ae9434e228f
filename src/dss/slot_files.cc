#include "dss/slot_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>

#include "common/log.h"
#include "dss/random_read_engine.h"

namespace rustfs::dss {

namespace {
constexpr uint64_t kBlock = 4096;

Status FsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + dir);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc < 0) return Status::FromErrno(err, "fsync " + dir);
  return Status::Ok();
}
}  // namespace

SlotFiles::~SlotFiles() {
  for (auto& [n, f] : files_) {
    if (f->direct_fd >= 0 && f->direct_fd != f->fd) ::close(f->direct_fd);
    if (f->fd >= 0) ::close(f->fd);
  }
}

Result<std::unique_ptr<SlotFiles>> SlotFiles::Open(const std::string& dir, uint64_t file_bytes,
                                                   bool direct) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Err(IoError("create " + dir + ": " + ec.message()));
  std::unique_ptr<SlotFiles> s(new SlotFiles(dir, file_bytes, direct));
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename();
    if (name.ends_with(".dat")) RUSTFS_RETURN_ERR(s->OpenFile(name));
    // A file whose creation did not finish (no name yet) is not ours to keep.
    if (name.ends_with(".new")) std::filesystem::remove(e.path(), ec);
  }
  if (ec) return Err(IoError("list " + dir + ": " + ec.message()));
  return s;
}

Status SlotFiles::OpenFile(const std::string& name) {
  auto f = std::make_unique<File>();
  unsigned number = 0, slots = 0;
  unsigned long long slot_bytes = 0;
  if (std::sscanf(name.c_str(), "%u-%llux%u.dat", &number, &slot_bytes, &slots) != 3 || slots == 0 ||
      slot_bytes == 0 || slot_bytes % kBlock)
    return Corruption("data file name " + name + " in " + dir_);
  f->number = number;
  f->slot_bytes = slot_bytes;
  f->slots = slots;
  f->path = dir_ + "/" + name;
  f->fd = ::open(f->path.c_str(), O_RDWR | O_CLOEXEC);
  if (f->fd < 0) return Status::FromErrno(errno, "open " + f->path);
  f->direct_fd = f->fd;
  if (direct_) {
    auto d = RandomReadEngine::OpenForRead(f->path, /*direct=*/true);
    if (!d) return d.error();
    f->direct_fd = d->fd;
  }
  f->used.assign(slots, false);
  for (uint32_t i = slots; i > 0; i--) f->free.push_back(i - 1);  // low slots first
  next_number_ = std::max(next_number_, number + 1);
  files_[number] = std::move(f);
  return Status::Ok();
}

Result<SlotFiles::File*> SlotFiles::CreateFile(uint64_t slot_bytes) {
  const uint32_t number = next_number_++;
  // As many slots as fit in file_bytes, fewer when the disk is short of room.
  for (uint64_t slots = std::max<uint64_t>(1, file_bytes_ / slot_bytes); slots >= 1; slots /= 2) {
    char name[96];
    std::snprintf(name, sizeof name, "%06u-%" PRIu64 "x%" PRIu64 ".dat", number, slot_bytes, slots);
    const std::string tmp = dir_ + "/" + name + ".new";
    int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Err(Status::FromErrno(errno, "create " + tmp));
    // Allocated in one go: few extents, all in the inode, so no read ever
    // waits for extent metadata.
    int rc = ::fallocate(fd, 0, 0, off_t(slots * slot_bytes));
    int err = errno;
    if (rc == 0) rc = ::fsync(fd), err = errno;
    ::close(fd);
    if (rc != 0) {
      ::unlink(tmp.c_str());
      if ((err == ENOSPC || err == EDQUOT) && slots > 1) continue;
      return Err(Status::FromErrno(err, "allocate data file " + tmp));
    }
    if (::rename(tmp.c_str(), (dir_ + "/" + name).c_str()) < 0)
      return Err(Status::FromErrno(errno, "rename " + tmp));
    RUSTFS_RETURN_ERR(FsyncDir(dir_));
    RUSTFS_RETURN_ERR(OpenFile(name));
    LOG_INFO("data file {}: {} slots of {} bytes", name, slots, slot_bytes);
    return files_[number].get();
  }
  return Err({Code::kNoSpace, "no room for a data file of " + std::to_string(slot_bytes) + "-byte slots"});
}

void SlotFiles::MarkUsed(SlotRef s) {
  std::lock_guard lk(mu_);
  auto it = files_.find(s.file);
  if (it == files_.end() || s.slot >= it->second->slots) return;
  File& f = *it->second;
  if (f.used[s.slot]) return;
  f.used[s.slot] = true;
  std::erase(f.free, s.slot);
}

void SlotFiles::ReleaseDue() {
  const auto now = std::chrono::steady_clock::now();
  while (!quarantine_.empty() && quarantine_.front().first <= now) {
    SlotRef s = quarantine_.front().second;
    quarantine_.pop_front();
    File& f = *files_.at(s.file);
    f.used[s.slot] = false;
    f.free.push_back(s.slot);
  }
}

Result<SlotRef> SlotFiles::Allocate(uint64_t slot_bytes) {
  if (slot_bytes == 0 || slot_bytes % kBlock) return Err(InvalidArgument("slot size " + std::to_string(slot_bytes)));
  std::lock_guard lk(mu_);
  ReleaseDue();
  for (auto& [n, f] : files_) {
    if (f->slot_bytes != slot_bytes || f->free.empty()) continue;
    uint32_t slot = f->free.back();
    f->free.pop_back();
    f->used[slot] = true;
    return SlotRef{n, slot};
  }
  auto f = CreateFile(slot_bytes);
  if (!f) return Err(f.error());
  uint32_t slot = (*f)->free.back();
  (*f)->free.pop_back();
  (*f)->used[slot] = true;
  return SlotRef{(*f)->number, slot};
}

void SlotFiles::Free(SlotRef s) {
  std::lock_guard lk(mu_);
  if (!files_.count(s.file)) return;
  quarantine_.emplace_back(std::chrono::steady_clock::now() + kReuseDelay, s);
}

Result<SlotFiles::Location> SlotFiles::Locate(SlotRef s) const {
  std::lock_guard lk(mu_);
  auto it = files_.find(s.file);
  if (it == files_.end() || s.slot >= it->second->slots)
    return Err(InvalidArgument("no slot " + std::to_string(s.slot) + " in data file " + std::to_string(s.file)));
  const File& f = *it->second;  // files are never removed while the store is open
  return Location{f.fd, f.direct_fd, uint64_t(s.slot) * f.slot_bytes, f.slot_bytes, &f.path};
}

uint64_t SlotFiles::FreeSlotBytes() const {
  std::lock_guard lk(mu_);
  uint64_t total = 0;
  for (auto& [n, f] : files_) total += f->free.size() * f->slot_bytes;
  return total;
}

}  // namespace rustfs::dss
