#include "fuse/fuse_ops.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

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
// invalidates the kernel's copy (see InstallInvalidation).
double Timeout(fuse_req_t req) { return C(req).CacheTimeoutSeconds(); }

void ToStat(const pb::Attr& a, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_ino = a.ino();
  st->st_mode = a.mode();
  st->st_nlink = a.nlink();
  st->st_uid = a.uid();
  st->st_gid = a.gid();
  st->st_size = a.size();
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

OpenFile& FileOf(fuse_file_info* fi) {
  return **reinterpret_cast<std::shared_ptr<OpenFile>*>(fi->fh);
}

void Init(void* userdata, fuse_conn_info* conn) {
  // Many reads in flight per file: fio's iodepth and PyTorch workers reach
  // the daemon concurrently instead of queueing in the kernel.
  conn->max_background = 128;
  conn->congestion_threshold = 96;
  if (conn->capable & FUSE_CAP_ASYNC_DIO) conn->want |= FUSE_CAP_ASYNC_DIO;
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
int64_t NowNs() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return Ns(t);
}

void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info*) {
  pb::SetAttrReq r;
  r.set_ino(ino);
  uint32_t v = 0;
  if (to_set & FUSE_SET_ATTR_MODE) v |= pb::SET_MODE, r.set_mode(attr->st_mode);
  if (to_set & FUSE_SET_ATTR_UID) v |= pb::SET_UID, r.set_uid(attr->st_uid);
  if (to_set & FUSE_SET_ATTR_GID) v |= pb::SET_GID, r.set_gid(attr->st_gid);
  if (to_set & FUSE_SET_ATTR_SIZE) v |= pb::SET_SIZE, r.set_size(attr->st_size);
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) v |= pb::SET_ATIME, r.set_atime_ns(NowNs());
  else if (to_set & FUSE_SET_ATTR_ATIME) v |= pb::SET_ATIME, r.set_atime_ns(Ns(attr->st_atim));
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) v |= pb::SET_MTIME, r.set_mtime_ns(NowNs());
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

void Mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t) {
  if (!S_ISREG(mode)) { fuse_reply_err(req, EPERM); return; }  // only regular files are stored
  const fuse_ctx* ctx = fuse_req_ctx(req);
  ReplyEntry(req, C(req).Create(parent, name, mode & ~ctx->umask, ctx->uid, ctx->gid, true));
}

void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  auto a = C(req).Create(parent, name, mode & ~ctx->umask, ctx->uid, ctx->gid,
                         (fi->flags & O_EXCL) != 0);
  if (!a) return ReplyErr(req, a.error());
  auto f = C(req).Open(a->ino());
  if (!f) return ReplyErr(req, f.error());
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
  auto f = C(req).Open(ino);
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
  fi->fh = reinterpret_cast<uint64_t>(new std::shared_ptr<OpenFile>(std::move(*f)));
  fuse_reply_open(req, fi);
}

ReadBatcher* g_batcher = nullptr;

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

void Flush(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  fuse_reply_err(req, C(req).Flush(FileOf(fi)).ToErrno());
}

void Fsync(fuse_req_t req, fuse_ino_t, int, fuse_file_info* fi) {
  fuse_reply_err(req, C(req).Flush(FileOf(fi)).ToErrno());
}

void Release(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  auto* f = reinterpret_cast<std::shared_ptr<OpenFile>*>(fi->fh);
  Status s = C(req).Release(*f);
  delete f;
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
void Ioctl(fuse_req_t req, fuse_ino_t, unsigned int cmd, void*, fuse_file_info* fi,
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
  fuse_reply_err(req, ENOTTY);
}

void GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  std::string json;
  if (std::strcmp(name, kStatsXattr) == 0) {
    json = CountersToJson(C(req).Stats());
  } else if (std::strcmp(name, kModeXattr) == 0) {
    json = C(req).ModeOf(ino);
  } else if (std::strcmp(name, kLayoutXattr) == 0) {
    auto a = C(req).GetAttr(ino);
    if (!a) { ReplyErr(req, a.error()); return; }
    json = client::LayoutSpec(a->layout());
  } else {
    fuse_reply_err(req, ENODATA);
    return;
  }
  if (size == 0) { fuse_reply_xattr(req, json.size()); return; }
  if (size < json.size()) { fuse_reply_err(req, ERANGE); return; }
  fuse_reply_buf(req, json.data(), json.size());
}

// user.rustfs.layout = "ec:K+M" | "replica:R" on a directory (files created
// in it from then on) or an empty file.
void SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
              int) {
  if (std::strcmp(name, kLayoutXattr) != 0) { fuse_reply_err(req, ENOTSUP); return; }
  fuse_reply_err(req, C(req).SetLayout(ino, std::string(value, size)).ToErrno());
}

}  // namespace

void UseReadBatcher(ReadBatcher* b) { g_batcher = b; }

namespace {

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops o{};
  o.init = Init;
  o.lookup = Lookup;
  o.getattr = GetAttr;
  o.setattr = SetAttr;
  o.mkdir = Mkdir;
  o.mknod = Mknod;
  o.create = Create;
  o.unlink = Unlink;
  o.rmdir = Rmdir;
  o.rename = Rename;
  o.open = Open;
  o.read = Read;
  o.write = Write;
  o.flush = Flush;
  o.fsync = Fsync;
  o.release = Release;
  o.opendir = OpenDir;
  o.readdir = ReadDir;
  o.releasedir = ReleaseDir;
  o.statfs = StatFs;
  o.getxattr = GetXattr;
  o.setxattr = SetXattr;
  o.ioctl = Ioctl;
  return o;
}

}  // namespace

void InstallInvalidation(client::Client& c, fuse_session* se) {
  c.SetInvalidateHook([se](uint64_t ino, const std::string& name) {
    // Errors (ENOENT: the kernel has nothing cached for it) are fine.
    if (name.empty()) {
      fuse_lowlevel_notify_inval_inode(se, ino, 0, 0);  // attributes and cached pages
    } else {
      fuse_lowlevel_notify_inval_entry(se, ino, name.c_str(), name.size());
      fuse_lowlevel_notify_inval_inode(se, ino, -1, 0);  // the directory's attributes
    }
  });
}

const fuse_lowlevel_ops& Operations() {
  static const fuse_lowlevel_ops ops = MakeOps();
  return ops;
}

}  // namespace rustfs::fuse
