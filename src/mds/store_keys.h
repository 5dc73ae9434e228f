// RocksDB key layout of the MDS store (private to src/mds/mds_store*.cc).
//
// Integers are big-endian so a prefix scan walks them in order:
//   I<ino>              -> pb::Attr
//   D<parent><name>     -> pb::Dirent
//   C<ino><chunk index> -> pb::ChunkEntry
//   X<ino><name>        -> extended attribute value (raw bytes)
//   O<ino>              -> "" : an inode with no name left, kept while open
//   G<seq>              -> pb::Garbage
//   B<ino><chunk><version><shard> -> pb::ReportBadShardReq
//   R<ino><chunk>       -> "" : a chunk to repair (a shard missing or bad)
//   Mnext_ino, Mnext_version, Mnext_garbage -> u64
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace rustfs::mds::keys {

inline void PutBe64(std::string& s, uint64_t v) {
  for (int i = 7; i >= 0; i--) s.push_back(char(v >> (8 * i)));
}
inline uint64_t GetBe64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = (v << 8) | uint8_t(p[i]);
  return v;
}
inline std::string WithIno(char tag, uint64_t ino) {
  std::string k(1, tag);
  PutBe64(k, ino);
  return k;
}
// Bytes of a key made of a tag, an inode and a chunk index (C..., R...).
inline constexpr size_t kInoIndexKeyBytes = 1 + 8 + 8;
// The (inode, chunk index) of such a key; nullopt for a key of another size.
inline std::optional<std::pair<uint64_t, uint64_t>> ParseInoIndex(std::string_view key) {
  if (key.size() != kInoIndexKeyBytes) return std::nullopt;
  return std::pair{GetBe64(key.data() + 1), GetBe64(key.data() + 9)};
}
inline std::string Inode(uint64_t ino) { return WithIno('I', ino); }
inline std::string DirPrefix(uint64_t parent) { return WithIno('D', parent); }
inline std::string Dirent(uint64_t parent, const std::string& name) { return DirPrefix(parent) + name; }
inline std::string ChunkPrefix(uint64_t ino) { return WithIno('C', ino); }
inline std::string Chunk(uint64_t ino, uint64_t index) {
  std::string k = ChunkPrefix(ino);
  PutBe64(k, index);
  return k;
}
inline std::string XattrPrefix(uint64_t ino) { return WithIno('X', ino); }
inline std::string Xattr(uint64_t ino, const std::string& name) { return XattrPrefix(ino) + name; }
inline std::string Repair(uint64_t ino, uint64_t index) {
  std::string k = WithIno('R', ino);
  PutBe64(k, index);
  return k;
}
inline std::string BadShardPrefix(uint64_t ino, uint64_t index) {
  std::string k = WithIno('B', ino);
  PutBe64(k, index);
  return k;
}
inline std::string Orphan(uint64_t ino) { return WithIno('O', ino); }
inline std::string Garbage(uint64_t seq) { return WithIno('G', seq); }

inline constexpr const char* kNextIno = "Mnext_ino";
inline constexpr const char* kNextVersion = "Mnext_version";
inline constexpr const char* kNextGarbage = "Mnext_garbage";

}  // namespace rustfs::mds::keys
