// Client: fallocate(2). Space is never reserved (a hole takes no room and
// reads as zeros), so allocation only moves the size; punching a hole or
// zeroing a range drops the chunks it covers whole (M_PUNCH, which first
// recalls other clients' buffered writes) and writes zeros over the rest.
#include <linux/falloc.h>

#include "client/client.h"
#include "layout/layout.h"

namespace rustfs::client {

Status Client::Fallocate(OpenFile& f, int mode, uint64_t offset, uint64_t len) {
  constexpr int kKnown = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE;
  if (mode & ~kKnown) return {Code::kNotSupported, "fallocate mode " + std::to_string(mode)};
  if (len == 0) return InvalidArgument("fallocate of 0 bytes");
  if (!layout::RangeFitsFile(offset, len)) return {Code::kTooBig, "fallocate range past the largest file size (2^63 - 1)"};
  const bool punch = mode & FALLOC_FL_PUNCH_HOLE, zero = mode & FALLOC_FL_ZERO_RANGE;
  const bool keep_size = mode & FALLOC_FL_KEEP_SIZE;
  if (punch && (!keep_size || zero)) return InvalidArgument("PUNCH_HOLE needs KEEP_SIZE alone");
  FileState& st = *f.state;
  const uint64_t ino = st.ino;
  if (punch || zero) {
    uint64_t size;
    {
      std::unique_lock lk(st.mu);
      RUSTFS_RETURN_IF_ERROR(FlushLocked(st));
      if (st.map_stale || !LeaseValid()) RUSTFS_RETURN_IF_ERROR(RefreshMap(st));
      size = st.attr.size();
    }
    // Bytes past the end are zeros already (and a hole must not grow the file).
    const uint64_t end = std::min(offset + len, size);
    if (offset < end) {
      const uint64_t cs = st.geo.chunk_size;
      const uint64_t first_whole = (offset + cs - 1) / cs, end_whole = end / cs;
      if (first_whole < end_whole) {
        pb::PunchReq p;
        p.set_ino(ino);
        p.set_first_index(first_whole);
        p.set_count(end_whole - first_whole);
        p.set_client_id(client_id_);
        uint64_t seq = revoke_seq_.load();
        auto a = mds_.Call<pb::AttrReply>(pb::M_PUNCH, p);  // not under st.mu: it may recall us
        if (!a) return a.error();
        AdoptAttr(a->attr(), seq);
        std::unique_lock lk(st.mu);
        for (uint64_t i = first_whole; i < end_whole; i++) st.chunks.erase(i);
      }
      if (fcache_) fcache_->Erase({ino}, offset, end - offset);
      // The partial chunks at either end: written zeros.
      std::unique_lock lk(st.mu);
      const std::string zeros(std::min<uint64_t>(end - offset, cs), '\0');
      auto zero = [&](uint64_t from, uint64_t to) -> Status {
        for (uint64_t at = from; at < to; at += zeros.size())
          RUSTFS_RETURN_IF_ERROR(WriteLocked(st, at, zeros.data(), std::min<uint64_t>(zeros.size(), to - at)));
        return Status::Ok();
      };
      if (first_whole < end_whole) {
        RUSTFS_RETURN_IF_ERROR(zero(offset, first_whole * cs));
        RUSTFS_RETURN_IF_ERROR(zero(end_whole * cs, end));
      } else {
        RUSTFS_RETURN_IF_ERROR(zero(offset, end));
      }
      RUSTFS_RETURN_IF_ERROR(FlushLocked(st));
    }
  }
  if (!keep_size) {
    // Allocation (mode 0) and ZERO_RANGE without KEEP_SIZE grow the file.
    uint64_t size;
    {
      std::shared_lock lk(st.mu);
      size = st.attr.size();
    }
    if (offset + len > size) {
      pb::SetAttrReq r;
      r.set_ino(ino);
      r.set_valid(pb::SET_SIZE);
      r.set_size(offset + len);
      auto a = SetAttr(r);
      if (!a) return a.error();
    }
  }
  return Status::Ok();
}

}  // namespace rustfs::client
