#include "fuse/fuse_ops.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "fuse/read_batcher.h"
#include "rustfs/ioctl.h"

namespace rustfs::fuse {

namespace {

using client::Client;
using client::OpenFile;

Client& C(fuse_req_t req) { return *static_cast<Client*>(fuse_req_userdata(req)); }

// The kernel caches attributes and entries as long as our lease lasts:
// another client's change revokes the lease, and the revocation
// invalidates the kernel's copy (see InstallKernelHooks).
double Timeout(fuse_req_t req) { return C(req).CacheTimeoutSeconds(); }

void ToStat(const pb::Attr& a, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_ino = a.ino();
  st->st_mode = a.mode();
  st->st_nlink = a.nlink();
  st->st_uid = a.uid();
  st->st_gid = a.gid();
  st->st_size = a.size();
  st->st_rdev = a.rdev();
  st->st_blksize = 4096;
  st->st_blocks = (a.size() + 511) / 512;
  st->st_atim = {a.atime_ns() / 1000000000, a.atime_ns() % 1000000000};
  st->st_mtim = {a.mtime_ns() / 1000000000, a.mtime_ns() % 1000000000};
  st->st_ctim = {a.ctime_ns() / 1000000000, a.ctime_ns() % 1000000000};
}

void ReplyErr(fuse_req_t req, const Status& s) { fuse_reply_err(req, s.ToErrno()); }

void ReplyEntry(fuse_req_t req, const Result<pb::Attr>& a) {
  if (!a) return ReplyErr(req, a.error());
  fuse_entry_param e{};
  e.ino = a->ino();
  e.attr_timeout = Timeout(req);
  e.entry_timeout = Timeout(req);
  ToStat(*a, &e.attr);
  fuse_reply_entry(req, &e);
}

bool Writable(const fuse_file_info* fi) { return (fi->flags & O_ACCMODE) != O_RDONLY; }

OpenFile& FileOf(fuse_file_info* fi) {
  return **reinterpret_cast<std::shared_ptr<OpenFile>*>(fi->fh);
}

void Init(void* userdata, fuse_conn_info* conn) {
  // Many reads in flight per file: fio's iodepth and PyTorch workers reach
  // the daemon concurrently instead of queueing in the kernel. Asynchronous
  // reads count as background requests: 256 is what the rings hold on two
  // CPUs at the default ring_depth (cold fio QD256, one job: 52-54 K reads/s
  // vs 38-46 K at 128).
  conn->max_background = kMaxBackground;
  conn->congestion_threshold = 192;
  if (conn->capable & FUSE_CAP_ASYNC_DIO) conn->want |= FUSE_CAP_ASYNC_DIO;
  // Advisory locks are the MDS's (across mounts), not the kernel's (one
  // mount only): SQLite and other databases rely on them.
  if (conn->capable & FUSE_CAP_POSIX_LOCKS) conn->want |= FUSE_CAP_POSIX_LOCKS;
  if (conn->capable & FUSE_CAP_FLOCK_LOCKS) conn->want |= FUSE_CAP_FLOCK_LOCKS;
}

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  ReplyEntry(req, C(req).Lookup(parent, name));
}

void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  auto a = C(req).GetAttr(ino);
  if (!a) return ReplyErr(req, a.error());
  struct stat st;
  ToStat(*a, &st);
  fuse_reply_attr(req, &st, Timeout(req));
}

int64_t Ns(const timespec& t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; }

void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info*) {
  pb::SetAttrReq r;
  r.set_ino(ino);
  uint32_t v = 0;
  if (to_set & FUSE_SET_ATTR_MODE) v |= pb::SET_MODE, r.set_mode(attr->st_mode);
  if (to_set & FUSE_SET_ATTR_UID) v |= pb::SET_UID, r.set_uid(attr->st_uid);
  if (to_set & FUSE_SET_ATTR_GID) v |= pb::SET_GID, r.set_gid(attr->st_gid);
  if (to_set & FUSE_SET_ATTR_SIZE) v |= pb::SET_SIZE, r.set_size(attr->st_size);
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) v |= pb::SET_ATIME, r.set_atime_ns(RealtimeNowNs());
  else if (to_set & FUSE_SET_ATTR_ATIME) v |= pb::SET_ATIME, r.set_atime_ns(Ns(attr->st_atim));
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) v |= pb::SET_MTIME, r.set_mtime_ns(RealtimeNowNs());
  else if (to_set & FUSE_SET_ATTR_MTIME) v |= pb::SET_MTIME, r.set_mtime_ns(Ns(attr->st_mtim));
  r.set_valid(v);
  auto a = C(req).SetAttr(r);
  if (!a) return ReplyErr(req, a.error());
  struct stat st;
  ToStat(*a, &st);
  fuse_reply_attr(req, &st, Timeout(req));
}

void Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  ReplyEntry(req, C(req).Mkdir(parent, name, mode & ~ctx->umask, ctx->uid, ctx->gid));
}

void Mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  const mode_t perm = mode & 07777 & ~ctx->umask;
  if (S_ISREG(mode) || (mode & S_IFMT) == 0)
    return ReplyEntry(req, C(req).Create(parent, name, perm, ctx->uid, ctx->gid, true));
  ReplyEntry(req, C(req).Mknod(parent, name, (mode & S_IFMT) | perm, rdev, ctx->uid, ctx->gid));
}

void Symlink(fuse_req_t req, const char* target, fuse_ino_t parent, const char* name) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  ReplyEntry(req, C(req).Symlink(parent, name, target, ctx->uid, ctx->gid));
}

void Readlink(fuse_req_t req, fuse_ino_t ino) {
  auto t = C(req).ReadLink(ino);
  if (!t) return ReplyErr(req, t.error());
  fuse_reply_readlink(req, t->c_str());
}

void Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname) {
  ReplyEntry(req, C(req).Link(ino, newparent, newname));
}

void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  auto a = C(req).Create(parent, name, mode & ~ctx->umask, ctx->uid, ctx->gid,
                         (fi->flags & O_EXCL) != 0);
  if (!a) return ReplyErr(req, a.error());
  auto f = C(req).Open(a->ino(), Writable(fi));
  if (!f) return ReplyErr(req, f.error());
  fi->keep_cache = (*f)->keep_kernel_cache;
  fi->fh = reinterpret_cast<uint64_t>(new std::shared_ptr<OpenFile>(std::move(*f)));
  fuse_entry_param e{};
  e.ino = a->ino();
  e.attr_timeout = Timeout(req);
  e.entry_timeout = Timeout(req);
  ToStat(*a, &e.attr);
  fuse_reply_create(req, &e, fi);
}

void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  fuse_reply_err(req, C(req).Unlink(parent, name).ToErrno());
}

void Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  fuse_reply_err(req, C(req).Rmdir(parent, name).ToErrno());
}

void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
            const char* newname, unsigned int flags) {
  fuse_reply_err(req, C(req).Rename(parent, name, newparent, newname, flags).ToErrno());
}

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto f = C(req).Open(ino, Writable(fi));
  if (!f) return ReplyErr(req, f.error());
  if (fi->flags & O_TRUNC) {
    pb::SetAttrReq r;
    r.set_ino(ino);
    r.set_valid(pb::SET_SIZE);
    r.set_size(0);
    if (auto a = C(req).SetAttr(r); !a) {
      (void)C(req).Release(*f);
      return ReplyErr(req, a.error());
    }
  }
  fi->keep_cache = (*f)->keep_kernel_cache;
  fi->fh = reinterpret_cast<uint64_t>(new std::shared_ptr<OpenFile>(std::move(*f)));
  fuse_reply_open(req, fi);
}

ReadBatcher* g_batcher = nullptr;
std::string g_control_path;  // the control socket's path (RUSTFS_CONTROL_XATTR)

void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  if (g_batcher) return g_batcher->Submit(req, &FileOf(fi), uint64_t(off), size);
  std::unique_ptr<char[]> buf(new char[size]);
  auto n = C(req).Read(FileOf(fi), off, size, buf.get());
  if (!n) {
    // The application sees only an errno: say what went wrong here.
    LOG_WARN("read of inode {} at {}+{} failed: {}", uint64_t(ino), int64_t(off), size,
             n.error().ToString());
    return ReplyErr(req, n.error());
  }
  fuse_reply_buf(req, buf.get(), *n);
}

void Write(fuse_req_t req, fuse_ino_t, const char* data, size_t size, off_t off,
           fuse_file_info* fi) {
  Status s = C(req).Write(FileOf(fi), off, data, size);
  if (!s.ok()) return ReplyErr(req, s);
  fuse_reply_write(req, size);
}

// Every close(2) of a descriptor: publish, report write errors, and drop
// the closing process's fcntl locks (POSIX: any close releases them).
void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Status s = C(req).Flush(FileOf(fi));
  Status l = C(req).ReleaseLocks(ino, fi->lock_owner, /*flock=*/false);
  fuse_reply_err(req, (s.ok() ? l : s).ToErrno());
}

void Fsync(fuse_req_t req, fuse_ino_t, int, fuse_file_info* fi) {
  fuse_reply_err(req, C(req).Fsync(FileOf(fi)).ToErrno());
}

// The last close of an open file description: its flock lock goes too.
void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto* f = reinterpret_cast<std::shared_ptr<OpenFile>*>(fi->fh);
  if (fi->flock_release) (void)C(req).ReleaseLocks(ino, fi->lock_owner, /*flock=*/true);
  Status s = C(req).Release(*f);
  delete f;
  fuse_reply_err(req, s.ToErrno());
}

void Fallocate(fuse_req_t req, fuse_ino_t, int mode, off_t off, off_t len, fuse_file_info* fi) {
  if (off < 0 || len <= 0) return (void)fuse_reply_err(req, EINVAL);
  fuse_reply_err(req, C(req).Fallocate(FileOf(fi), mode, uint64_t(off), uint64_t(len)).ToErrno());
}

client::LockSpec SpecOf(const fuse_file_info* fi, const struct flock* lock) {
  client::LockSpec l;
  l.owner = fi->lock_owner;
  l.pid = uint32_t(lock->l_pid);
  l.type = lock->l_type;
  l.start = uint64_t(lock->l_start);
  l.end = lock->l_len == 0 ? UINT64_MAX : uint64_t(lock->l_start + lock->l_len - 1);
  return l;
}

void GetLk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock) {
  auto r = C(req).GetLock(ino, SpecOf(fi, lock));
  if (!r) return ReplyErr(req, r.error());
  struct flock out = *lock;
  out.l_type = short(r->type);
  if (r->type != F_UNLCK) {
    out.l_whence = SEEK_SET;
    out.l_start = off_t(r->start);
    out.l_len = r->end == UINT64_MAX ? 0 : off_t(r->end - r->start + 1);
    out.l_pid = pid_t(r->pid);
  }
  fuse_reply_lock(req, &out);
}

void SetLk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock, int sleep) {
  Status s = C(req).SetLock(ino, SpecOf(fi, lock), sleep != 0,
                            [req] { return fuse_req_interrupted(req) != 0; });
  fuse_reply_err(req, s.ToErrno());
}

void Flock(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, int op) {
  client::LockSpec l;
  l.owner = fi->lock_owner;
  l.pid = uint32_t(fuse_req_ctx(req)->pid);
  l.flock = true;
  switch (op & ~LOCK_NB) {
    case LOCK_SH: l.type = F_RDLCK; break;
    case LOCK_EX: l.type = F_WRLCK; break;
    case LOCK_UN: l.type = F_UNLCK; break;
    default: return (void)fuse_reply_err(req, EINVAL);
  }
  Status s = C(req).SetLock(ino, l, !(op & LOCK_NB), [req] { return fuse_req_interrupted(req) != 0; });
  // flock says EWOULDBLOCK (== EAGAIN) for a held lock, as fcntl does.
  fuse_reply_err(req, s.ToErrno());
}

// A directory listing is read whole at opendir, so readdir offsets (indexes
// into it) stay valid even while entries are added or removed.
struct DirHandle {
  std::vector<pb::ReadDirEntry> entries;
};

void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto h = std::make_unique<DirHandle>();
  std::string after;
  for (;;) {
    auto r = C(req).ReadDir(ino, after, 4096);
    if (!r) return ReplyErr(req, r.error());
    for (auto& e : r->entries()) h->entries.push_back(e);
    if (!r->more() || r->entries().empty()) break;
    after = r->entries().rbegin()->name();
  }
  fi->fh = reinterpret_cast<uint64_t>(h.release());
  fuse_reply_open(req, fi);
}

void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  auto* h = reinterpret_cast<DirHandle*>(fi->fh);
  std::string buf(size, '\0');
  size_t used = 0;
  // Offsets: 0 ".", 1 "..", 2+i entry i. Each entry carries the next offset.
  for (off_t i = off; i < off_t(h->entries.size()) + 2; i++) {
    struct stat st{};
    std::string name;
    if (i == 0) {
      name = ".", st.st_ino = ino, st.st_mode = S_IFDIR;
    } else if (i == 1) {
      name = "..", st.st_ino = ino, st.st_mode = S_IFDIR;  // the kernel resolves ".." itself
    } else {
      const auto& e = h->entries[i - 2];
      name = e.name(), st.st_ino = e.ino(), st.st_mode = e.mode();
    }
    size_t n = fuse_add_direntry(req, buf.data() + used, size - used, name.c_str(), &st, i + 1);
    if (n > size - used) break;
    used += n;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void ReleaseDir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  delete reinterpret_cast<DirHandle*>(fi->fh);
  fuse_reply_err(req, 0);
}

void StatFs(fuse_req_t req, fuse_ino_t) {
  auto r = C(req).StatFs();
  if (!r) return ReplyErr(req, r.error());
  struct statvfs v{};
  v.f_bsize = 4096;
  v.f_frsize = 4096;
  v.f_blocks = r->total_bytes() / 4096;
  v.f_bfree = r->free_bytes() / 4096;
  v.f_bavail = v.f_bfree;
  v.f_files = r->files();
  v.f_ffree = 1u << 30;
  v.f_namemax = 255;
  fuse_reply_statfs(req, &v);
}

// The kernel does not pass posix_fadvise to FUSE daemons: hints arrive as
// RUSTFS_IOC_FADVISE on the open file (sent by applications, or by
// librustfs_preload.so on their behalf).
void Ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void*, fuse_file_info* fi,
           unsigned flags, const void* in_buf, size_t in_bufsz, size_t out_bufsz) {
  if (flags & FUSE_IOCTL_DIR) { fuse_reply_err(req, ENOTTY); return; }
  if (cmd == RUSTFS_IOC_MAGIC_GET) {
    uint64_t magic = RUSTFS_MAGIC;
    if (out_bufsz < sizeof magic) { fuse_reply_err(req, EINVAL); return; }
    fuse_reply_ioctl(req, 0, &magic, sizeof magic);
    return;
  }
  if (cmd == RUSTFS_IOC_FADVISE) {
    rustfs_fadvise a;
    if (in_bufsz != sizeof a) { fuse_reply_err(req, EINVAL); return; }
    std::memcpy(&a, in_buf, sizeof a);
    if (a.reserved != 0) { fuse_reply_err(req, EINVAL); return; }
    Status s = C(req).Advise(FileOf(fi), a.offset, a.length, int(a.advice));
    if (!s.ok()) { ReplyErr(req, s); return; }
    fuse_reply_ioctl(req, 0, nullptr, 0);
    return;
  }
  if (cmd == RUSTFS_IOC_PLAN) {
    if (in_bufsz != sizeof(rustfs_plan_ioctl)) { fuse_reply_err(req, EINVAL); return; }
    auto* p = static_cast<const rustfs_plan_ioctl*>(in_buf);
    if (p->reserved != 0 || p->count == 0 || p->count > RUSTFS_PLAN_IOCTL_ENTRIES) {
      fuse_reply_err(req, EINVAL);
      return;
    }
    std::vector<client::PlanEntry> entries(p->count);
    for (uint32_t i = 0; i < p->count; i++) entries[i] = {p->entries[i].offset, p->entries[i].length};
    Status s = C(req).SubmitPlan(ino, std::move(entries), p->depth);
    if (!s.ok()) { ReplyErr(req, s); return; }
    fuse_reply_ioctl(req, 0, nullptr, 0);
    return;
  }
  fuse_reply_err(req, ENOTTY);
}

// Replies to getxattr/listxattr with `value`: its size when asked for the
// size (size 0), ERANGE when it does not fit.
void ReplyXattrValue(fuse_req_t req, const std::string& value, size_t size) {
  if (size == 0) return (void)fuse_reply_xattr(req, value.size());
  if (size < value.size()) return (void)fuse_reply_err(req, ERANGE);
  fuse_reply_buf(req, value.data(), value.size());
}

// Control attributes (user.rustfs.stats, .mode, .layout) are answered here
// and never listed, so copying a tree off the mount does not copy them;
// every other name is the inode's own extended attribute.
void GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  std::string value;
  if (std::strcmp(name, kStatsXattr) == 0) {
    value = CountersToJson(C(req).Stats());
  } else if (std::strcmp(name, kModeXattr) == 0) {
    value = C(req).ModeOf(ino);
  } else if (std::strcmp(name, RUSTFS_CONTROL_XATTR) == 0) {
    if (g_control_path.empty()) return ReplyErr(req, {Code::kNoData, "no control socket"});
    value = g_control_path;
  } else if (std::strcmp(name, kLayoutXattr) == 0) {
    auto a = C(req).GetAttr(ino);
    if (!a) return ReplyErr(req, a.error());
    value = layout::LayoutSpec(a->layout());
  } else {
    auto v = C(req).GetXattr(ino, name);
    if (!v) return ReplyErr(req, v.error());
    value = std::move(*v);
  }
  ReplyXattrValue(req, value, size);
}

// user.rustfs.layout = "ec:K+M" | "replica:R" on a directory (files created
// in it from then on) or an empty file.
void SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
              int flags) {
  if (std::strcmp(name, kLayoutXattr) == 0)
    return (void)fuse_reply_err(req, C(req).SetLayout(ino, std::string(value, size)).ToErrno());
  if (std::strcmp(name, kStatsXattr) == 0 || std::strcmp(name, kModeXattr) == 0 ||
      std::strcmp(name, RUSTFS_CONTROL_XATTR) == 0)
    return (void)fuse_reply_err(req, EPERM);  // read-only control attributes
  fuse_reply_err(req, C(req).SetXattr(ino, name, std::string(value, size), uint32_t(flags)).ToErrno());
}

void ListXattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  auto names = C(req).ListXattr(ino);
  if (!names) return ReplyErr(req, names.error());
  std::string list;
  for (const auto& n : *names) list.append(n).push_back('\0');
  ReplyXattrValue(req, list, size);
}

void RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  fuse_reply_err(req, C(req).RemoveXattr(ino, name).ToErrno());
}

}  // namespace

void UseReadBatcher(ReadBatcher* b) { g_batcher = b; }
void AdvertiseControlSocket(const std::string& path) { g_control_path = path; }

namespace {

// Every callback but init runs behind Guarded: an exception (bad_alloc on
// an absurd request, a bug) answers the request with ENOMEM or EIO and is
// counted, instead of unwinding into libfuse's C code, which would end the
// daemon and with it every process's mount.
template <auto Fn>
struct Guarded;
template <class... A, void (*Fn)(fuse_req_t, A...)>
struct Guarded<Fn> {
  static void Call(fuse_req_t req, A... a) {
    static Counter& caught = GetCounter("fuse.callback_exceptions");
    try {
      Fn(req, a...);
    } catch (const std::bad_alloc&) {
      caught.Inc();
      fuse_reply_err(req, ENOMEM);
    } catch (const std::exception& e) {
      caught.Inc();
      LOG_ERROR("FUSE callback threw: {}", e.what());
      fuse_reply_err(req, EIO);
    }
  }
};

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops o{};
  o.init = Init;
  o.lookup = Guarded<Lookup>::Call;
  o.getattr = Guarded<GetAttr>::Call;
  o.setattr = Guarded<SetAttr>::Call;
  o.mkdir = Guarded<Mkdir>::Call;
  o.mknod = Guarded<Mknod>::Call;
  o.symlink = Guarded<Symlink>::Call;
  o.readlink = Guarded<Readlink>::Call;
  o.link = Guarded<Link>::Call;
  o.create = Guarded<Create>::Call;
  o.unlink = Guarded<Unlink>::Call;
  o.rmdir = Guarded<Rmdir>::Call;
  o.rename = Guarded<Rename>::Call;
  o.open = Guarded<Open>::Call;
  o.read = Guarded<Read>::Call;
  o.write = Guarded<Write>::Call;
  o.flush = Guarded<Flush>::Call;
  o.fsync = Guarded<Fsync>::Call;
  o.release = Guarded<Release>::Call;
  o.opendir = Guarded<OpenDir>::Call;
  o.readdir = Guarded<ReadDir>::Call;
  o.releasedir = Guarded<ReleaseDir>::Call;
  o.statfs = Guarded<StatFs>::Call;
  o.getxattr = Guarded<GetXattr>::Call;
  o.setxattr = Guarded<SetXattr>::Call;
  o.listxattr = Guarded<ListXattr>::Call;
  o.removexattr = Guarded<RemoveXattr>::Call;
  o.getlk = Guarded<GetLk>::Call;
  o.setlk = Guarded<SetLk>::Call;
  o.flock = Guarded<Flock>::Call;
  o.fallocate = Guarded<Fallocate>::Call;
  o.ioctl = Guarded<Ioctl>::Call;
  return o;
}

bool Store(fuse_session* se, uint64_t ino, uint64_t offset, std::string_view bytes) {
  fuse_bufvec bv = FUSE_BUFVEC_INIT(bytes.size());
  bv.buf[0].mem = const_cast<char*>(bytes.data());  // only read
  // ENOENT: the kernel has forgotten the inode (nothing to store into).
  return fuse_lowlevel_notify_store(se, ino, off_t(offset), &bv, fuse_buf_copy_flags(0)) == 0;
}

void Invalidate(fuse_session* se, uint64_t ino, const std::string& name) {
  // Errors (ENOENT: the kernel has nothing cached for it) are fine.
  if (name.empty()) {
    fuse_lowlevel_notify_inval_inode(se, ino, 0, 0);  // attributes and cached pages
  } else {
    fuse_lowlevel_notify_inval_entry(se, ino, name.c_str(), name.size());
    fuse_lowlevel_notify_inval_inode(se, ino, -1, 0);  // the directory's attributes
  }
}

// CloseKernelCalls: `closing` turns new calls away without the lock (a
// stream of calls cannot hold the closer off), the lock waits out those
// in progress.
std::atomic<bool> g_kernel_closing{false};
std::shared_mutex g_kernel_mu;

// Runs call() unless the kernel calls are closed; false if they are.
template <typename F>
bool KernelCall(F&& call) {
  if (g_kernel_closing.load()) return false;
  std::shared_lock l(g_kernel_mu);
  if (g_kernel_closing.load()) return false;
  return call();
}
}  // namespace

void CloseKernelCalls() {
  g_kernel_closing = true;
  std::unique_lock l(g_kernel_mu);
}

void InstallKernelHooks(client::Client& c, fuse_session* se) {
  c.SetKernelStoreHook([se](uint64_t ino, uint64_t offset, std::string_view bytes) {
    return KernelCall([&] { return Store(se, ino, offset, bytes); });
  });
  c.SetInvalidateHook([se](uint64_t ino, const std::string& name) {
    KernelCall([&] {
      Invalidate(se, ino, name);
      return true;
    });
  });
}

const fuse_lowlevel_ops& Operations() {
  static const fuse_lowlevel_ops ops = MakeOps();
  return ops;
}

}  // namespace rustfs::fuse
