// MdsStore on a real RocksDB in a temp directory: namespace operations,
// nlink accounting, chunk-map versioning and garbage, and that everything
// survives closing and reopening the store.
#include "mds/mds_store.h"

#include "layout/layout.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace rustfs::mds {
namespace {

constexpr uint64_t kChunk = 1 << 20;

// prefix + decimal i (built with append: GCC 12 warns, wrongly, on
// "literal" + std::to_string under -O2).
std::string Name(const char* prefix, uint64_t i) {
  std::string s = prefix;
  s.append(std::to_string(i));
  return s;
}

// Placement as the MDS did before degraded writes: a new chunk on
// `servers`, an existing one where it is.
MdsStore::PlaceFn Fixed(std::vector<uint32_t> servers) {
  return [servers](const pb::Layout&, std::span<const uint32_t> cur) -> Result<std::vector<uint32_t>> {
    if (!cur.empty()) return std::vector<uint32_t>(cur.begin(), cur.end());
    return servers;
  };
}

pb::Layout TestLayout() {
  pb::Layout l;
  l.set_kind(0);
  l.set_k(4);
  l.set_m(2);
  l.set_stripe_unit(64 * 1024);
  l.set_chunk_size(kChunk);
  return l;
}

class MdsStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mds_store_test.XXXXXX";
    char* d = ::mkdtemp(tmpl);
    ASSERT_NE(d, nullptr);
    dir_ = d;
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void Reopen() {
    store_.reset();
    auto s = MdsStore::Open(dir_ + "/db", TestLayout());
    ASSERT_TRUE(s.has_value()) << s.error().ToString();
    store_ = std::move(*s);
  }

  Result<pb::Attr> Make(uint64_t parent, const std::string& name, bool is_dir,
                        bool exclusive = true) {
    pb::CreateReq r;
    r.set_parent(parent);
    r.set_name(name);
    r.set_mode(is_dir ? S_IFDIR | 0755 : 0644);
    r.set_uid(1000);
    r.set_gid(100);
    r.set_exclusive(exclusive);
    return store_->Create(r);
  }
  uint64_t MustMake(uint64_t parent, const std::string& name, bool is_dir) {
    auto a = Make(parent, name, is_dir);
    EXPECT_TRUE(a.has_value()) << name << ": " << a.error().ToString();
    return a ? a->ino() : 0;
  }
  uint32_t Nlink(uint64_t ino) {
    auto a = store_->GetAttr(ino);
    EXPECT_TRUE(a.has_value());
    return a ? a->nlink() : 0;
  }
  Status Rename(uint64_t parent, const std::string& name, uint64_t new_parent,
                const std::string& new_name, uint32_t flags = 0) {
    pb::RenameReq r;
    r.set_parent(parent);
    r.set_name(name);
    r.set_new_parent(new_parent);
    r.set_new_name(new_name);
    r.set_flags(flags);
    auto u = store_->Rename(r);
    return u ? Status::Ok() : u.error();
  }
  Status Unlink(uint64_t parent, const std::string& name) {
    auto u = store_->Unlink(parent, name);
    return u ? Status::Ok() : u.error();
  }
  Status Rmdir(uint64_t parent, const std::string& name) {
    auto u = store_->Rmdir(parent, name);
    return u ? Status::Ok() : u.error();
  }
  // Garbage due at any time from now on.
  std::vector<std::pair<std::string, pb::Garbage>> Garbage(size_t max) {
    return store_->PeekGarbage(max, INT64_MAX);
  }
  // Allocates and commits a new version of chunk `index`; returns the version.
  uint64_t WriteChunk(uint64_t ino, uint64_t index, uint64_t size_at_least = 0) {
    auto a = store_->AllocateChunk(ino, index, Fixed({1, 2, 3, 4, 5, 6}));
    EXPECT_TRUE(a.has_value());
    if (!a) return 0;
    pb::CommitChunkReq c;
    c.set_ino(ino);
    *c.mutable_chunk() = a->chunk();
    c.set_base_version(a->base_version());
    c.set_size_at_least(size_at_least);
    auto r = store_->CommitChunk(c);
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return a->chunk().version();
  }
  std::vector<uint64_t> ChunkIndexes(uint64_t ino, uint64_t off = 0, uint64_t len = 0) {
    auto m = store_->GetChunkMap(ino, off, len);
    EXPECT_TRUE(m.has_value());
    std::vector<uint64_t> out;
    if (m)
      for (auto& c : m->chunks()) out.push_back(c.index());
    return out;
  }
  std::vector<std::string> ListAll(uint64_t dir) {
    auto r = store_->ReadDir(dir, "", 1000000);
    EXPECT_TRUE(r.has_value());
    std::vector<std::string> out;
    if (r)
      for (auto& e : r->entries()) out.push_back(e.name());
    return out;
  }

  std::string dir_;
  std::unique_ptr<MdsStore> store_;
};

TEST_F(MdsStoreTest, FreshStoreHasRoot) {
  auto root = store_->GetAttr(kRootIno);
  ASSERT_TRUE(root.has_value());
  EXPECT_TRUE(S_ISDIR(root->mode()));
  EXPECT_EQ(root->nlink(), 2u);
  EXPECT_EQ(root->layout().chunk_size(), kChunk);
  EXPECT_TRUE(ListAll(kRootIno).empty());
  EXPECT_EQ(store_->GetAttr(999).error().code(), Code::kNotFound);
}

TEST_F(MdsStoreTest, CreateLookupGetAttr) {
  auto f = Make(kRootIno, "file", false);
  ASSERT_TRUE(f.has_value());
  EXPECT_TRUE(S_ISREG(f->mode()));
  EXPECT_EQ(f->mode() & 07777, 0644u);
  EXPECT_EQ(f->uid(), 1000u);
  EXPECT_EQ(f->gid(), 100u);
  EXPECT_EQ(f->nlink(), 1u);
  EXPECT_EQ(f->size(), 0u);
  EXPECT_EQ(f->layout().k(), 4u);  // inherited from the directory
  EXPECT_NE(f->ino(), kRootIno);

  auto l = store_->Lookup(kRootIno, "file");
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->ino(), f->ino());
  auto g = store_->GetAttr(f->ino());
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->SerializeAsString(), f->SerializeAsString());

  EXPECT_EQ(store_->Lookup(kRootIno, "nope").error().code(), Code::kNotFound);
  // Exclusive create of an existing name fails; non-exclusive opens it.
  EXPECT_EQ(Make(kRootIno, "file", false).error().code(), Code::kAlreadyExists);
  auto again = Make(kRootIno, "file", false, /*exclusive=*/false);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->ino(), f->ino());
  // mkdir over an existing name always fails.
  EXPECT_EQ(Make(kRootIno, "file", true, false).error().code(), Code::kAlreadyExists);
  // Files are not directories.
  EXPECT_EQ(Make(f->ino(), "x", false).error().code(), Code::kNotDirectory);
  EXPECT_EQ(store_->Lookup(f->ino(), "x").error().code(), Code::kNotDirectory);
  EXPECT_EQ(store_->ReadDir(f->ino(), "", 10).error().code(), Code::kNotDirectory);
  // Missing parent.
  EXPECT_EQ(Make(4242, "x", false).error().code(), Code::kNotFound);
}

TEST_F(MdsStoreTest, InodeNumbersAreUnique) {
  std::set<uint64_t> seen{kRootIno};
  for (int i = 0; i < 50; i++) {
    uint64_t ino = MustMake(kRootIno, Name("n", i), i % 3 == 0);
    EXPECT_TRUE(seen.insert(ino).second) << ino;
  }
}

TEST_F(MdsStoreTest, BadNamesRefused) {
  const std::string bad[] = {"", ".", "..", "a/b", "/", std::string("a\0b", 3)};
  for (const auto& n : bad) {
    EXPECT_EQ(Make(kRootIno, n, false).error().code(), Code::kInvalidArgument) << n.size();
    EXPECT_EQ(Make(kRootIno, n, true).error().code(), Code::kInvalidArgument) << n.size();
  }
  // Over 255 bytes: ENAMETOOLONG.
  const std::string too_long(256, 'x');
  EXPECT_EQ(Make(kRootIno, too_long, false).error().code(), Code::kNameTooLong);
  EXPECT_EQ(Make(kRootIno, too_long, true).error().code(), Code::kNameTooLong);
  EXPECT_EQ(store_->Lookup(kRootIno, too_long).error().code(), Code::kNameTooLong);
  EXPECT_TRUE(ListAll(kRootIno).empty());
  // 255 bytes is the limit and is fine.
  EXPECT_TRUE(Make(kRootIno, std::string(255, 'x'), false).has_value());
  EXPECT_TRUE(Make(kRootIno, "...", false).has_value());
  MustMake(kRootIno, "src", false);
  for (const auto& n : bad)
    EXPECT_EQ(Rename(kRootIno, "src", kRootIno, n).code(), Code::kInvalidArgument) << n.size();
  EXPECT_EQ(Rename(kRootIno, "src", kRootIno, too_long).code(), Code::kNameTooLong);
  EXPECT_TRUE(store_->Lookup(kRootIno, "src").has_value());
}

TEST_F(MdsStoreTest, ReadDirPagination) {
  uint64_t d = MustMake(kRootIno, "dir", true);
  // A sibling directory's entries must not leak into the listing.
  uint64_t other = MustMake(kRootIno, "other", true);
  MustMake(other, "zzz", false);
  std::mt19937_64 rng(11);
  std::set<std::string> names;
  while (names.size() < 57) names.insert(Name("f", rng() % 100000));
  int i = 0;
  for (auto& n : names) MustMake(d, n, i++ % 5 == 0);  // some subdirectories
  const std::vector<std::string> want(names.begin(), names.end());

  for (uint32_t page : {1u, 7u, 10u, 19u, 57u, 100u}) {
    SCOPED_TRACE("page " + std::to_string(page));
    std::vector<std::string> got;
    std::string after;
    for (int iter = 0; iter < 100; iter++) {
      auto r = store_->ReadDir(d, after, page);
      ASSERT_TRUE(r.has_value());
      ASSERT_LE(uint32_t(r->entries_size()), page);
      for (auto& e : r->entries()) {
        got.push_back(e.name());
        auto l = store_->Lookup(d, e.name());
        ASSERT_TRUE(l.has_value());
        EXPECT_EQ(e.ino(), l->ino());
        EXPECT_EQ(e.mode(), l->mode());
      }
      if (!r->more()) break;
      ASSERT_GT(r->entries_size(), 0);
      after = got.back();
    }
    EXPECT_EQ(got, want);
  }
  // `after` that is not itself an entry: starts at the next name.
  auto r = store_->ReadDir(d, want[10] + "!", 3);  // '!' sorts before digits
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->entries_size(), 3);
  EXPECT_EQ(r->entries(0).name(), want[11]);
  // Past the last entry: empty, no more.
  r = store_->ReadDir(d, want.back(), 10);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->entries_size(), 0);
  EXPECT_FALSE(r->more());
  EXPECT_EQ(ListAll(other), std::vector<std::string>{"zzz"});
}

TEST_F(MdsStoreTest, MkdirRmdirNlink) {
  EXPECT_EQ(Nlink(kRootIno), 2u);
  uint64_t a = MustMake(kRootIno, "a", true);
  EXPECT_EQ(Nlink(kRootIno), 3u);
  EXPECT_EQ(Nlink(a), 2u);
  uint64_t b = MustMake(kRootIno, "b", true);
  EXPECT_EQ(Nlink(kRootIno), 4u);
  MustMake(a, "sub", true);
  EXPECT_EQ(Nlink(a), 3u);
  MustMake(a, "file", false);
  EXPECT_EQ(Nlink(a), 3u);  // files do not add links to the directory
  EXPECT_EQ(store_->GetAttr(b)->parent(), kRootIno);

  // rmdir: non-empty, file, missing.
  EXPECT_EQ(Rmdir(kRootIno, "a").code(), Code::kNotEmpty);
  EXPECT_EQ(Rmdir(a, "file").code(), Code::kNotDirectory);
  EXPECT_EQ(Rmdir(a, "missing").code(), Code::kNotFound);
  // unlink of a directory is refused.
  EXPECT_EQ(Unlink(a, "sub").code(), Code::kIsDirectory);
  EXPECT_EQ(Unlink(a, "missing").code(), Code::kNotFound);

  ASSERT_TRUE(Rmdir(a, "sub").ok());
  EXPECT_EQ(Nlink(a), 2u);
  ASSERT_TRUE(Unlink(a, "file").ok());
  EXPECT_EQ(store_->Lookup(a, "file").error().code(), Code::kNotFound);
  EXPECT_EQ(ListAll(a), std::vector<std::string>{});
  ASSERT_TRUE(Rmdir(kRootIno, "a").ok());
  EXPECT_EQ(Nlink(kRootIno), 3u);
  EXPECT_EQ(store_->GetAttr(a).error().code(), Code::kNotFound);
  ASSERT_TRUE(Rmdir(kRootIno, "b").ok());
  EXPECT_EQ(Nlink(kRootIno), 2u);
  EXPECT_TRUE(ListAll(kRootIno).empty());
}

TEST_F(MdsStoreTest, UnlinkQueuesChunksAsGarbage) {
  uint64_t f = MustMake(kRootIno, "f", false);
  for (uint64_t i = 0; i < 5; i++) WriteChunk(f, i, (i + 1) * kChunk);
  EXPECT_TRUE(Garbage(100).empty());
  ASSERT_TRUE(Unlink(kRootIno, "f").ok());
  // Its last name is gone, but it lives on as an orphan (open handles)...
  EXPECT_EQ(store_->Lookup(kRootIno, "f").error().code(), Code::kNotFound);
  EXPECT_EQ(store_->GetAttr(f)->nlink(), 0u);
  EXPECT_EQ(ChunkIndexes(f).size(), 5u);
  EXPECT_TRUE(store_->IsOrphan(f));
  EXPECT_EQ(store_->Orphans(), std::vector<uint64_t>{f});
  EXPECT_TRUE(Garbage(100).empty());
  // ...until it is collected.
  ASSERT_TRUE(store_->CollectOrphan(f).ok());
  EXPECT_EQ(store_->GetAttr(f).error().code(), Code::kNotFound);
  EXPECT_FALSE(store_->IsOrphan(f));
  EXPECT_TRUE(store_->Orphans().empty());
  auto g = Garbage(100);
  ASSERT_EQ(g.size(), 5u);
  std::set<uint64_t> idx;
  for (auto& [k, v] : g) {
    EXPECT_EQ(v.ino(), f);
    idx.insert(v.chunk().index());
  }
  EXPECT_EQ(idx, (std::set<uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(Garbage(2).size(), 2u);
  ASSERT_TRUE(store_->DropGarbage(g[0].first).ok());
  EXPECT_EQ(Garbage(100).size(), 4u);
}

TEST_F(MdsStoreTest, RenameSameDirAndAcrossDirs) {
  uint64_t f = MustMake(kRootIno, "a", false);
  ASSERT_TRUE(Rename(kRootIno, "a", kRootIno, "b").ok());
  EXPECT_EQ(store_->Lookup(kRootIno, "a").error().code(), Code::kNotFound);
  EXPECT_EQ(store_->Lookup(kRootIno, "b")->ino(), f);
  // Rename onto itself is a no-op.
  ASSERT_TRUE(Rename(kRootIno, "b", kRootIno, "b").ok());
  EXPECT_EQ(store_->Lookup(kRootIno, "b")->ino(), f);
  EXPECT_EQ(Rename(kRootIno, "missing", kRootIno, "c").code(), Code::kNotFound);

  uint64_t d1 = MustMake(kRootIno, "d1", true);
  uint64_t d2 = MustMake(kRootIno, "d2", true);
  ASSERT_TRUE(Rename(kRootIno, "b", d1, "x").ok());
  EXPECT_EQ(store_->Lookup(d1, "x")->ino(), f);
  ASSERT_TRUE(Rename(d1, "x", d2, "y").ok());
  EXPECT_EQ(store_->Lookup(d1, "x").error().code(), Code::kNotFound);
  EXPECT_EQ(store_->Lookup(d2, "y")->ino(), f);
  EXPECT_EQ(Nlink(d1), 2u);
  EXPECT_EQ(Nlink(d2), 2u);
  // Target parent missing or a file.
  EXPECT_EQ(Rename(d2, "y", 4242, "z").code(), Code::kNotFound);
  EXPECT_EQ(Rename(d2, "y", f, "z").code(), Code::kNotDirectory);
  // Unsupported flags.
  EXPECT_EQ(Rename(d2, "y", d1, "z", 2).code(), Code::kInvalidArgument);

  // Moving a directory: parent pointer and both parents' nlink follow.
  uint64_t sub = MustMake(d1, "sub", true);
  MustMake(sub, "inner", false);
  EXPECT_EQ(Nlink(d1), 3u);
  ASSERT_TRUE(Rename(d1, "sub", d2, "sub2").ok());
  EXPECT_EQ(Nlink(d1), 2u);
  EXPECT_EQ(Nlink(d2), 3u);
  EXPECT_EQ(store_->GetAttr(sub)->parent(), d2);
  EXPECT_EQ(store_->Lookup(sub, "inner").has_value(), true);
  EXPECT_EQ(ListAll(d2), (std::vector<std::string>{"sub2", "y"}));
  // Renaming a directory within its parent keeps nlink.
  ASSERT_TRUE(Rename(d2, "sub2", d2, "sub3").ok());
  EXPECT_EQ(Nlink(d2), 3u);
  EXPECT_EQ(store_->GetAttr(sub)->parent(), d2);
  EXPECT_EQ(Nlink(kRootIno), 4u);
}

TEST_F(MdsStoreTest, RenameReplacesFile) {
  uint64_t src = MustMake(kRootIno, "src", false);
  uint64_t dst = MustMake(kRootIno, "dst", false);
  WriteChunk(dst, 0, 100);
  WriteChunk(dst, 3, 3 * kChunk + 100);
  WriteChunk(src, 1, 2 * kChunk);
  // NOREPLACE refuses and changes nothing.
  EXPECT_EQ(Rename(kRootIno, "src", kRootIno, "dst", 1).code(), Code::kAlreadyExists);
  EXPECT_EQ(store_->Lookup(kRootIno, "dst")->ino(), dst);
  EXPECT_EQ(store_->Lookup(kRootIno, "src")->ino(), src);
  EXPECT_TRUE(Garbage(10).empty());

  ASSERT_TRUE(Rename(kRootIno, "src", kRootIno, "dst").ok());
  EXPECT_EQ(store_->Lookup(kRootIno, "dst")->ino(), src);
  EXPECT_EQ(store_->Lookup(kRootIno, "src").error().code(), Code::kNotFound);
  EXPECT_TRUE(store_->IsOrphan(dst));  // replaced: nameless, kept for open handles
  EXPECT_TRUE(Garbage(10).empty());
  ASSERT_TRUE(store_->CollectOrphan(dst).ok());
  EXPECT_EQ(store_->GetAttr(dst).error().code(), Code::kNotFound);
  EXPECT_EQ(ChunkIndexes(src), std::vector<uint64_t>{1});
  auto g = Garbage(10);
  ASSERT_EQ(g.size(), 2u);  // dst's two chunks
  for (auto& [k, v] : g) EXPECT_EQ(v.ino(), dst);
  EXPECT_EQ(ListAll(kRootIno), std::vector<std::string>{"dst"});

  // Replacing across directories.
  uint64_t d = MustMake(kRootIno, "d", true);
  uint64_t t = MustMake(d, "t", false);
  ASSERT_TRUE(Rename(kRootIno, "dst", d, "t").ok());
  EXPECT_EQ(store_->Lookup(d, "t")->ino(), src);
  EXPECT_EQ(store_->GetAttr(t)->nlink(), 0u);
  EXPECT_TRUE(store_->IsOrphan(t));
  EXPECT_EQ(ListAll(kRootIno), std::vector<std::string>{"d"});
}

TEST_F(MdsStoreTest, RenameDirectoryRules) {
  uint64_t a = MustMake(kRootIno, "a", true);
  uint64_t b = MustMake(a, "b", true);
  uint64_t c = MustMake(b, "c", true);
  // Into itself or any descendant.
  EXPECT_EQ(Rename(kRootIno, "a", a, "x").code(), Code::kInvalidArgument);
  EXPECT_EQ(Rename(kRootIno, "a", b, "x").code(), Code::kInvalidArgument);
  EXPECT_EQ(Rename(kRootIno, "a", c, "x").code(), Code::kInvalidArgument);
  EXPECT_EQ(Rename(a, "b", c, "x").code(), Code::kInvalidArgument);
  EXPECT_TRUE(store_->Lookup(kRootIno, "a").has_value());
  // But moving a subdirectory up is fine.
  ASSERT_TRUE(Rename(b, "c", kRootIno, "c").ok());
  EXPECT_EQ(store_->GetAttr(c)->parent(), kRootIno);
  EXPECT_EQ(Nlink(b), 2u);
  EXPECT_EQ(Nlink(kRootIno), 4u);  // a, c

  // Directory over a non-empty directory.
  uint64_t full = MustMake(kRootIno, "full", true);
  MustMake(full, "x", false);
  EXPECT_EQ(Rename(kRootIno, "c", kRootIno, "full").code(), Code::kNotEmpty);
  // Directory over a file, file over a directory.
  MustMake(kRootIno, "file", false);
  EXPECT_EQ(Rename(kRootIno, "c", kRootIno, "file").code(), Code::kNotDirectory);
  EXPECT_EQ(Rename(kRootIno, "file", kRootIno, "c").code(), Code::kIsDirectory);
  EXPECT_EQ(Nlink(kRootIno), 5u);  // a, c, full

  // Directory over an empty directory in another parent replaces it.
  uint64_t empty = MustMake(a, "empty", true);
  EXPECT_EQ(Nlink(a), 4u);  // b, empty
  ASSERT_TRUE(Rename(kRootIno, "c", a, "empty").ok());
  EXPECT_EQ(store_->Lookup(a, "empty")->ino(), c);
  EXPECT_EQ(store_->GetAttr(empty).error().code(), Code::kNotFound);
  EXPECT_EQ(store_->GetAttr(c)->parent(), a);
  EXPECT_EQ(Nlink(a), 4u);          // b, c (as "empty")
  EXPECT_EQ(Nlink(kRootIno), 4u);   // a, full
  // And in the same parent.
  MustMake(a, "e2", true);
  EXPECT_EQ(Nlink(a), 5u);
  ASSERT_TRUE(Rename(a, "empty", a, "e2").ok());
  EXPECT_EQ(Nlink(a), 4u);
  EXPECT_EQ(store_->Lookup(a, "e2")->ino(), c);
  EXPECT_EQ(ListAll(a), (std::vector<std::string>{"b", "e2"}));
}

TEST_F(MdsStoreTest, SetAttrShrinkDropsChunksBeyondEnd) {
  uint64_t f = MustMake(kRootIno, "f", false);
  std::vector<uint64_t> versions;
  for (uint64_t i = 0; i < 10; i++) versions.push_back(WriteChunk(f, i, (i + 1) * kChunk));
  EXPECT_EQ(store_->GetAttr(f)->size(), 10 * kChunk);
  ASSERT_TRUE(Garbage(100).empty());

  pb::SetAttrReq r;
  r.set_ino(f);
  r.set_valid(pb::SET_SIZE);
  r.set_size(3 * kChunk + 5);  // chunk 3 keeps its head
  // The client must have zeroed chunk 3's tail in its current version.
  r.set_tail_version(versions[3] - 1);
  EXPECT_EQ(store_->SetAttr(r).error().code(), Code::kStale);
  EXPECT_EQ(store_->GetAttr(f)->size(), 10 * kChunk);
  EXPECT_EQ(ChunkIndexes(f).size(), 10u);
  r.set_tail_version(versions[3]);
  auto a = store_->SetAttr(r);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->size(), 3 * kChunk + 5);
  EXPECT_EQ(ChunkIndexes(f), (std::vector<uint64_t>{0, 1, 2, 3}));
  auto g = Garbage(100);
  ASSERT_EQ(g.size(), 6u);
  std::set<uint64_t> idx;
  for (auto& [k, v] : g) idx.insert(v.chunk().index());
  EXPECT_EQ(idx, (std::set<uint64_t>{4, 5, 6, 7, 8, 9}));

  // Exactly at a chunk boundary: chunk 3 lies wholly beyond and goes.
  r.set_size(3 * kChunk);
  ASSERT_TRUE(store_->SetAttr(r).has_value());
  EXPECT_EQ(ChunkIndexes(f), (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(Garbage(100).size(), 7u);

  // Growing drops nothing.
  r.set_size(20 * kChunk);
  ASSERT_TRUE(store_->SetAttr(r).has_value());
  EXPECT_EQ(ChunkIndexes(f), (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(store_->GetAttr(f)->size(), 20 * kChunk);
  EXPECT_EQ(Garbage(100).size(), 7u);

  // Up to 2^63 - 1 (what off_t holds), not one byte more.
  r.set_size(uint64_t(INT64_MAX) + 1);
  EXPECT_EQ(store_->SetAttr(r).error().code(), Code::kTooBig);
  EXPECT_EQ(store_->GetAttr(f)->size(), 20 * kChunk);
  r.set_size(INT64_MAX);
  ASSERT_TRUE(store_->SetAttr(r).has_value());
  EXPECT_EQ(store_->GetAttr(f)->size(), uint64_t(INT64_MAX));

  // To zero: everything goes.
  r.set_size(0);
  ASSERT_TRUE(store_->SetAttr(r).has_value());
  EXPECT_TRUE(ChunkIndexes(f).empty());
  EXPECT_EQ(Garbage(100).size(), 10u);

  // Truncating a directory is refused; mode keeps the type bits.
  pb::SetAttrReq dr;
  dr.set_ino(kRootIno);
  dr.set_valid(pb::SET_SIZE);
  EXPECT_EQ(store_->SetAttr(dr).error().code(), Code::kIsDirectory);
  pb::SetAttrReq mr;
  mr.set_ino(f);
  mr.set_valid(pb::SET_MODE | pb::SET_UID);
  mr.set_mode(S_IFDIR | 0600);
  mr.set_uid(7);
  auto m = store_->SetAttr(mr);
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(S_ISREG(m->mode()));
  EXPECT_EQ(m->mode() & 07777, 0600u);
  EXPECT_EQ(m->uid(), 7u);
  EXPECT_EQ(store_->GetAttr(f)->uid(), 7u);
}

TEST_F(MdsStoreTest, AllocateCommitVersioning) {
  uint64_t f = MustMake(kRootIno, "f", false);
  auto a1 = store_->AllocateChunk(f, 2, Fixed({5, 6, 7}));
  ASSERT_TRUE(a1.has_value());
  EXPECT_EQ(a1->base_version(), 0u);
  EXPECT_EQ(a1->chunk().index(), 2u);
  EXPECT_EQ(std::vector<uint32_t>(a1->chunk().dss().begin(), a1->chunk().dss().end()),
            (std::vector<uint32_t>{5, 6, 7}));
  // Nothing is published until the commit.
  EXPECT_TRUE(ChunkIndexes(f).empty());

  pb::CommitChunkReq c1;
  c1.set_ino(f);
  *c1.mutable_chunk() = a1->chunk();
  c1.set_base_version(0);
  c1.set_size_at_least(2 * kChunk + 10);
  auto r1 = store_->CommitChunk(c1);
  ASSERT_TRUE(r1.has_value()) << r1.error().ToString();
  EXPECT_EQ(r1->size(), 2 * kChunk + 10);
  auto m = store_->GetChunkMap(f, 0, 0);
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->chunks_size(), 1);
  EXPECT_EQ(m->chunks(0).version(), a1->chunk().version());
  EXPECT_EQ(m->attr().size(), 2 * kChunk + 10);

  // A second allocation keeps the chunk's DSS and reports the base.
  auto a2 = store_->AllocateChunk(f, 2, Fixed({9, 9, 9}));
  ASSERT_TRUE(a2.has_value());
  EXPECT_EQ(a2->base_version(), a1->chunk().version());
  EXPECT_GT(a2->chunk().version(), a1->chunk().version());
  EXPECT_EQ(std::vector<uint32_t>(a2->chunk().dss().begin(), a2->chunk().dss().end()),
            (std::vector<uint32_t>{5, 6, 7}));
  auto a3 = store_->AllocateChunk(f, 2, Fixed({}));
  ASSERT_TRUE(a3.has_value());
  EXPECT_NE(a3->chunk().version(), a2->chunk().version());

  // a2 commits first; a3 (same base) is then stale, and so is base 0.
  pb::CommitChunkReq c2;
  c2.set_ino(f);
  *c2.mutable_chunk() = a2->chunk();
  c2.set_base_version(a2->base_version());
  c2.set_size_at_least(kChunk);  // smaller than the size: no shrink
  auto r2 = store_->CommitChunk(c2);
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(r2->size(), 2 * kChunk + 10);
  auto g = Garbage(10);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].second.ino(), f);
  EXPECT_EQ(g[0].second.chunk().index(), 2u);
  EXPECT_EQ(g[0].second.chunk().version(), a1->chunk().version());

  pb::CommitChunkReq c3;
  c3.set_ino(f);
  *c3.mutable_chunk() = a3->chunk();
  c3.set_base_version(a3->base_version());
  c3.set_size_at_least(100 * kChunk);
  EXPECT_EQ(store_->CommitChunk(c3).error().code(), Code::kStale);
  c3.set_base_version(0);
  EXPECT_EQ(store_->CommitChunk(c3).error().code(), Code::kStale);
  // The stale commits changed nothing.
  m = store_->GetChunkMap(f, 0, 0);
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->chunks_size(), 1);
  EXPECT_EQ(m->chunks(0).version(), a2->chunk().version());
  EXPECT_EQ(m->attr().size(), 2 * kChunk + 10);
  EXPECT_EQ(Garbage(10).size(), 1u);

  // A non-zero base for a chunk that does not exist is stale too.
  auto a4 = store_->AllocateChunk(f, 7, Fixed({1}));
  ASSERT_TRUE(a4.has_value());
  pb::CommitChunkReq c4;
  c4.set_ino(f);
  *c4.mutable_chunk() = a4->chunk();
  c4.set_base_version(a1->chunk().version());
  EXPECT_EQ(store_->CommitChunk(c4).error().code(), Code::kStale);

  // Commit to a removed file: NotFound, and the new shards become garbage.
  ASSERT_TRUE(Unlink(kRootIno, "f").ok());
  ASSERT_TRUE(store_->CollectOrphan(f).ok());
  size_t before = Garbage(100).size();
  c4.set_base_version(0);
  EXPECT_EQ(store_->CommitChunk(c4).error().code(), Code::kNotFound);
  EXPECT_EQ(Garbage(100).size(), before + 1);
  EXPECT_EQ(store_->AllocateChunk(f, 0, Fixed({1})).error().code(), Code::kNotFound);
}

TEST_F(MdsStoreTest, SizeAtLeastNeverShrinks) {
  uint64_t f = MustMake(kRootIno, "f", false);
  std::mt19937_64 rng(12);
  uint64_t expect = 0;
  for (int i = 0; i < 40; i++) {
    uint64_t s = rng() % (50 * kChunk);
    WriteChunk(f, rng() % 8, s);
    expect = std::max(expect, s);
    ASSERT_EQ(store_->GetAttr(f)->size(), expect);
  }
}

TEST_F(MdsStoreTest, GetChunkMapRangesMatchBruteForce) {
  uint64_t f = MustMake(kRootIno, "f", false);
  // A second file's chunks sit right after f's keys and must not show up.
  uint64_t other = MustMake(kRootIno, "other", false);
  for (uint64_t i = 0; i < 20; i++) WriteChunk(other, i);
  std::mt19937_64 rng(13);
  std::set<uint64_t> present;
  while (present.size() < 150) present.insert(rng() % 400);
  present.insert(0);
  present.insert(399);
  for (uint64_t i : present) WriteChunk(f, i);

  auto brute = [&](uint64_t off, uint64_t len) {
    std::vector<uint64_t> out;
    for (uint64_t i : present) {
      uint64_t cs = i * kChunk, ce = cs + kChunk;
      if (len == 0 ? true : (cs < off + len && ce > off)) out.push_back(i);
    }
    return out;
  };
  EXPECT_EQ(ChunkIndexes(f, 0, 0), brute(0, 0));
  for (int iter = 0; iter < 800; iter++) {
    uint64_t off = rng() % (420 * kChunk);
    uint64_t len;
    switch (iter % 4) {
      case 0: len = 1 + rng() % 16; break;                   // within a chunk, mostly
      case 1: len = 1 + rng() % (3 * kChunk); break;
      case 2: len = 1 + rng() % (500 * kChunk); break;
      default: off = (rng() % 420) * kChunk; len = kChunk * (1 + rng() % 3); break;
    }
    ASSERT_EQ(ChunkIndexes(f, off, len), brute(off, len)) << "off=" << off << " len=" << len;
  }
  // Exact chunk boundaries.
  EXPECT_EQ(ChunkIndexes(f, 0, kChunk), std::vector<uint64_t>{0});
  EXPECT_EQ(ChunkIndexes(f, 399 * kChunk, 1), std::vector<uint64_t>{399});
  EXPECT_EQ(ChunkIndexes(f, 399 * kChunk - 1, 2), brute(399 * kChunk - 1, 2));
  EXPECT_TRUE(ChunkIndexes(f, 400 * kChunk, kChunk).empty());
  EXPECT_EQ(store_->GetChunkMap(kRootIno, 0, 0).error().code(), Code::kIsDirectory);
  EXPECT_EQ(store_->GetChunkMap(4242, 0, 0).error().code(), Code::kNotFound);
}

// A range whose end passes 2^64 should still mean "from offset on".
TEST_F(MdsStoreTest, GetChunkMapHugeLength) {
  uint64_t f = MustMake(kRootIno, "f", false);
  for (uint64_t i = 0; i < 4; i++) WriteChunk(f, i);
  EXPECT_EQ(ChunkIndexes(f, kChunk, UINT64_MAX), (std::vector<uint64_t>{1, 2, 3}));
}

TEST_F(MdsStoreTest, PersistsAcrossReopen) {
  uint64_t d = MustMake(kRootIno, "d", true);
  uint64_t f = MustMake(d, "f", false);
  uint64_t v0 = WriteChunk(f, 0, 10);
  uint64_t v5 = WriteChunk(f, 5, 5 * kChunk + 77);
  WriteChunk(f, 5);  // queues v5 as garbage
  ASSERT_EQ(Garbage(10).size(), 1u);
  auto before = store_->GetAttr(f);
  ASSERT_TRUE(before.has_value());
  std::set<uint64_t> inos{kRootIno, d, f};
  uint64_t max_version = 0;
  {
    auto m = store_->GetChunkMap(f, 0, 0);
    for (auto& c : m->chunks()) max_version = std::max(max_version, c.version());
  }

  Reopen();
  if (HasFatalFailure()) return;
  auto root = store_->GetAttr(kRootIno);
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->nlink(), 3u);
  EXPECT_EQ(store_->Lookup(kRootIno, "d")->ino(), d);
  EXPECT_EQ(store_->Lookup(d, "f")->ino(), f);
  auto after = store_->GetAttr(f);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->SerializeAsString(), before->SerializeAsString());
  auto m = store_->GetChunkMap(f, 0, 0);
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->chunks_size(), 2);
  EXPECT_EQ(m->chunks(0).version(), v0);
  EXPECT_GT(m->chunks(1).version(), v5);
  auto g = Garbage(10);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].second.chunk().version(), v5);

  // New inodes, versions and garbage entries do not collide with old ones.
  for (int i = 0; i < 5; i++) {
    uint64_t n = MustMake(d, Name("n", i), i % 2 == 0);
    EXPECT_TRUE(inos.insert(n).second) << n;
  }
  auto a = store_->AllocateChunk(f, 0, Fixed({}));
  ASSERT_TRUE(a.has_value());
  EXPECT_GT(a->chunk().version(), max_version);
  pb::CommitChunkReq c;
  c.set_ino(f);
  *c.mutable_chunk() = a->chunk();
  c.set_base_version(a->base_version());
  ASSERT_TRUE(store_->CommitChunk(c).has_value());
  g = Garbage(10);
  ASSERT_EQ(g.size(), 2u);  // v5's entry was not overwritten
  EXPECT_NE(g[0].first, g[1].first);
  std::set<uint64_t> versions{g[0].second.chunk().version(), g[1].second.chunk().version()};
  EXPECT_EQ(versions, (std::set<uint64_t>{v5, v0}));

  // The root is not re-initialized by a second reopen.
  Reopen();
  if (HasFatalFailure()) return;
  EXPECT_EQ(ListAll(kRootIno), std::vector<std::string>{"d"});
  EXPECT_EQ(ListAll(d).size(), 6u);
  EXPECT_EQ(store_->GetAttr(kRootIno)->nlink(), 3u);
}

TEST_F(MdsStoreTest, HardLinksCountNamesAndOrphanAtTheLast) {
  uint64_t d = MustMake(kRootIno, "d", true);
  uint64_t f = MustMake(kRootIno, "f", false);
  WriteChunk(f, 0, 100);
  auto link = [&](uint64_t ino, uint64_t parent, const std::string& name) {
    pb::LinkReq r;
    r.set_ino(ino);
    r.set_new_parent(parent);
    r.set_new_name(name);
    return store_->Link(r);
  };
  auto a = link(f, d, "g");
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  EXPECT_EQ(a->nlink(), 2u);
  EXPECT_EQ(store_->Lookup(d, "g")->ino(), f);
  EXPECT_EQ(Nlink(d), 2u);  // a file's name adds no link to its directory
  EXPECT_EQ(link(f, d, "g").error().code(), Code::kAlreadyExists);
  EXPECT_EQ(link(d, kRootIno, "dlink").error().code(), Code::kNotPermitted);
  EXPECT_EQ(link(f, f, "x").error().code(), Code::kNotDirectory);
  EXPECT_EQ(link(f, kRootIno, "").error().code(), Code::kInvalidArgument);

  // Renaming one name over the other (same inode) changes nothing.
  ASSERT_TRUE(Rename(kRootIno, "f", d, "g").ok());
  EXPECT_EQ(Nlink(f), 2u);
  EXPECT_TRUE(store_->Lookup(kRootIno, "f").has_value());

  ASSERT_TRUE(Unlink(kRootIno, "f").ok());
  EXPECT_EQ(Nlink(f), 1u);
  EXPECT_FALSE(store_->IsOrphan(f));
  EXPECT_EQ(ChunkIndexes(f).size(), 1u);
  // A file replaced by rename loses only that name.
  ASSERT_TRUE(link(f, kRootIno, "again").has_value());
  MustMake(kRootIno, "other", false);
  ASSERT_TRUE(Rename(kRootIno, "other", kRootIno, "again").ok());
  EXPECT_EQ(Nlink(f), 1u);
  EXPECT_FALSE(store_->IsOrphan(f));
  ASSERT_TRUE(Unlink(d, "g").ok());
  EXPECT_EQ(Nlink(f), 0u);
  EXPECT_TRUE(store_->IsOrphan(f));
  // A nameless inode gets no new name.
  EXPECT_EQ(link(f, kRootIno, "back").error().code(), Code::kNotFound);
  // Survives a restart as an orphan, then goes.
  Reopen();
  if (HasFatalFailure()) return;
  EXPECT_EQ(store_->Orphans(), std::vector<uint64_t>{f});
  ASSERT_TRUE(store_->CollectOrphan(f).ok());
  EXPECT_EQ(store_->GetAttr(f).error().code(), Code::kNotFound);
  EXPECT_EQ(Garbage(10).size(), 1u);
  // Collecting what is not an orphan does nothing.
  uint64_t live = MustMake(kRootIno, "live", false);
  ASSERT_TRUE(store_->CollectOrphan(live).ok());
  EXPECT_TRUE(store_->GetAttr(live).has_value());
}

TEST_F(MdsStoreTest, SymlinksAndSpecialFiles) {
  pb::CreateReq r;
  r.set_parent(kRootIno);
  r.set_name("ln");
  r.set_mode(S_IFLNK);
  r.set_symlink("some/target");
  auto l = store_->Create(r);
  ASSERT_TRUE(l.has_value()) << l.error().ToString();
  EXPECT_TRUE(S_ISLNK(l->mode()));
  EXPECT_EQ(l->mode() & 07777, 0777u);
  EXPECT_EQ(l->symlink(), "some/target");
  EXPECT_EQ(l->size(), 11u);
  EXPECT_EQ(store_->Lookup(kRootIno, "ln")->symlink(), "some/target");
  r.set_name("empty");
  r.set_symlink("");
  EXPECT_EQ(store_->Create(r).error().code(), Code::kNotFound);
  r.set_name("long");
  r.set_symlink(std::string(4096, 'x'));
  EXPECT_EQ(store_->Create(r).error().code(), Code::kNameTooLong);
  r.set_name("ln");
  r.set_symlink("x");
  r.set_exclusive(false);
  EXPECT_EQ(store_->Create(r).error().code(), Code::kAlreadyExists);  // never "opens" a symlink

  for (uint32_t type : {uint32_t(S_IFIFO), uint32_t(S_IFSOCK), uint32_t(S_IFCHR), uint32_t(S_IFBLK)}) {
    pb::CreateReq n;
    n.set_parent(kRootIno);
    n.set_name(Name("node", type));
    n.set_mode(type | 0640);
    n.set_rdev(0x0801);
    auto a = store_->Create(n);
    ASSERT_TRUE(a.has_value()) << a.error().ToString();
    EXPECT_EQ(a->mode(), type | 0640);
    EXPECT_EQ(a->rdev(), (type == S_IFCHR || type == S_IFBLK) ? 0x0801u : 0u);
    // No data: a chunk map with no chunks, and no chunk can be allocated.
    EXPECT_EQ(store_->GetChunkMap(a->ino(), 0, 0)->chunks_size(), 0);
    EXPECT_EQ(store_->AllocateChunk(a->ino(), 0, Fixed({1})).error().code(), Code::kInvalidArgument);
  }
  pb::CreateReq bad;
  bad.set_parent(kRootIno);
  bad.set_name("bad");
  bad.set_mode(0170000);
  EXPECT_EQ(store_->Create(bad).error().code(), Code::kInvalidArgument);
}

TEST_F(MdsStoreTest, SetgidDirectoryPassesGroupDown) {
  pb::SetAttrReq sg;
  uint64_t d = MustMake(kRootIno, "sg", true);
  sg.set_ino(d);
  sg.set_valid(pb::SET_MODE | pb::SET_GID);
  sg.set_mode(02775);
  sg.set_gid(4242);
  ASSERT_TRUE(store_->SetAttr(sg).has_value());
  auto f = Make(d, "f", false);  // creator's gid is 100
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->gid(), 4242u);
  EXPECT_EQ(f->mode() & 07777, 0644u);
  auto sub = Make(d, "sub", true);
  ASSERT_TRUE(sub.has_value());
  EXPECT_EQ(sub->gid(), 4242u);
  EXPECT_EQ(sub->mode() & 07777, 02755u);  // directories inherit the bit
  auto plain = Make(kRootIno, "plain", false);
  EXPECT_EQ(plain->gid(), 100u);
}

TEST_F(MdsStoreTest, ExtendedAttributes) {
  uint64_t f = MustMake(kRootIno, "f", false);
  auto set = [&](const std::string& name, const std::string& value, uint32_t flags = 0) {
    pb::XattrReq r;
    r.set_ino(f);
    r.set_name(name);
    r.set_value(value);
    r.set_flags(flags);
    return store_->SetXattr(r);
  };
  EXPECT_EQ(store_->GetXattr(f, "user.a").error().code(), Code::kNoData);
  ASSERT_TRUE(set("user.a", "one").has_value());
  auto a = set("user.b", std::string("\0bin\xff", 5));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->xattrs(), 2u);
  EXPECT_EQ(*store_->GetXattr(f, "user.a"), "one");
  EXPECT_EQ(store_->GetXattr(f, "user.b")->size(), 5u);
  EXPECT_EQ(set("user.a", "x", XATTR_CREATE).error().code(), Code::kAlreadyExists);
  EXPECT_EQ(set("user.c", "x", XATTR_REPLACE).error().code(), Code::kNoData);
  EXPECT_EQ(set("user.a", "two", XATTR_REPLACE)->xattrs(), 2u);
  EXPECT_EQ(*store_->GetXattr(f, "user.a"), "two");
  EXPECT_EQ(*store_->ListXattr(f), (std::vector<std::string>{"user.a", "user.b"}));
  EXPECT_EQ(set("system.posix_acl_access", "x").error().code(), Code::kNotSupported);
  EXPECT_EQ(set("user." + std::string(251, 'n'), "x").error().code(), Code::kRange);
  EXPECT_EQ(set("user.big", std::string(kMaxXattrValue + 1, 'v')).error().code(), Code::kTooBig);
  EXPECT_TRUE(set("user.max", std::string(kMaxXattrValue, 'v')).has_value());
  EXPECT_TRUE(set("trusted.t", "t").has_value());
  auto r = store_->RemoveXattr(f, "user.a");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->xattrs(), 3u);
  EXPECT_EQ(store_->RemoveXattr(f, "user.a").error().code(), Code::kNoData);
  // Another inode's attributes are its own.
  uint64_t g = MustMake(kRootIno, "g", false);
  EXPECT_TRUE(store_->ListXattr(g)->empty());
  // They go with the inode.
  ASSERT_TRUE(Unlink(kRootIno, "f").ok());
  ASSERT_TRUE(store_->CollectOrphan(f).ok());
  EXPECT_EQ(store_->ListXattr(f).error().code(), Code::kNotFound);
  pb::CreateReq ln;
  ln.set_parent(kRootIno);
  ln.set_name("ln");
  ln.set_mode(S_IFLNK);
  ln.set_symlink("t");
  auto l = store_->Create(ln);
  pb::XattrReq on_link;
  on_link.set_ino(l->ino());
  on_link.set_name("user.x");
  EXPECT_EQ(store_->SetXattr(on_link).error().code(), Code::kNotPermitted);
}

TEST_F(MdsStoreTest, GarbageWaitsItsDelayAndPunchDropsChunks) {
  store_->SetGarbageDelay(3'600'000'000'000);  // an hour
  uint64_t f = MustMake(kRootIno, "f", false);
  for (uint64_t i = 0; i < 4; i++) WriteChunk(f, i, (i + 1) * kChunk);
  pb::PunchReq p;
  p.set_ino(f);
  p.set_first_index(1);
  p.set_count(2);
  auto a = store_->Punch(p);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->size(), 4 * kChunk);  // punching keeps the size
  EXPECT_EQ(ChunkIndexes(f), (std::vector<uint64_t>{0, 3}));
  EXPECT_TRUE(store_->PeekGarbage(10, NowNs()).empty());  // not yet due
  auto g = store_->PeekGarbage(10, NowNs() + 3'700'000'000'000);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].second.chunk().index(), 1u);
  EXPECT_EQ(g[1].second.chunk().index(), 2u);
}

}  // namespace
}  // namespace rustfs::mds

namespace rustfs::mds {
namespace {

constexpr uint32_t kNo = layout::kNoDss;

TEST_F(MdsStoreTest, ACommitNeedsAVersionThisStoreAllocatedAndNewer) {
  uint64_t f = MustMake(kRootIno, "f", false);
  const uint64_t v1 = WriteChunk(f, 0);
  ASSERT_NE(v1, 0u);
  // Replaying the live version's own commit (base = itself) would queue
  // the live shards as garbage: refused, nothing queued.
  pb::CommitChunkReq replay;
  replay.set_ino(f);
  replay.mutable_chunk()->set_index(0);
  replay.mutable_chunk()->set_version(v1);
  for (uint32_t d : {1u, 2u, 3u, 4u, 5u, 6u}) replay.mutable_chunk()->add_dss(d);
  replay.set_base_version(v1);
  EXPECT_EQ(store_->CommitChunk(replay).error().code(), Code::kInvalidArgument);
  // A version nobody allocated (far ahead of the counter): refused.
  replay.mutable_chunk()->set_version(v1 + 1'000'000);
  EXPECT_EQ(store_->CommitChunk(replay).error().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Garbage(10).empty());
  EXPECT_EQ(store_->GetChunkMap(f, 0, 0)->chunks(0).version(), v1);
  // Still refused after a restart (the bound comes from the persisted counter).
  Reopen();
  EXPECT_EQ(store_->CommitChunk(replay).error().code(), Code::kInvalidArgument);
  EXPECT_NE(WriteChunk(f, 0), 0u);
}

TEST_F(MdsStoreTest, DegradedCommitsAreQueuedAndRepairRecordsNewHomes) {
  uint64_t f = MustMake(kRootIno, "f", false);
  auto a = store_->AllocateChunk(f, 3, Fixed({0, 1, 2, 3, kNo, kNo}));
  ASSERT_TRUE(a.has_value());
  pb::CommitChunkReq c;
  c.set_ino(f);
  *c.mutable_chunk() = a->chunk();
  ASSERT_TRUE(store_->CommitChunk(c).has_value());
  EXPECT_EQ(store_->RepairQueue(10), (std::vector<std::pair<uint64_t, uint64_t>>{{f, 3}}));
  EXPECT_EQ(store_->RepairQueueSize(), 1u);
  Reopen();  // the queue is durable
  EXPECT_EQ(store_->RepairQueueSize(), 1u);

  // One position rebuilt: still degraded, still queued.
  pb::ChunkEntry rebuilt = a->chunk();
  rebuilt.set_dss(4, 7);
  ASSERT_TRUE(store_->RecordRepair(f, rebuilt, {4}).ok());
  auto h = store_->GetChunkHealth(f, 3);
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->chunk.dss(4), 7u);
  EXPECT_EQ(h->chunk.dss(5), kNo);
  EXPECT_EQ(store_->RepairQueueSize(), 1u);
  EXPECT_TRUE(Garbage(10).empty());  // nothing was replaced

  // A bad shard on a live server is recorded against that version.
  pb::ReportBadShardReq bad;
  bad.set_ino(f);
  bad.set_index(3);
  bad.set_version(a->chunk().version());
  bad.set_shard(1);
  bad.set_dss(1);
  ASSERT_TRUE(store_->RecordBadShard(bad).ok());
  h = store_->GetChunkHealth(f, 3);
  EXPECT_EQ(h->bad_shards, std::vector<uint32_t>{1});

  // Both rebuilt: shard 1 moved off DSS 1 (its old copy becomes garbage),
  // shard 5 placed; the chunk leaves the queue and its bad record goes.
  rebuilt = h->chunk;
  rebuilt.set_dss(1, 8);
  rebuilt.set_dss(5, 9);
  ASSERT_TRUE(store_->RecordRepair(f, rebuilt, {1, 5}).ok());
  h = store_->GetChunkHealth(f, 3);
  EXPECT_EQ(std::vector<uint32_t>(h->chunk.dss().begin(), h->chunk.dss().end()),
            (std::vector<uint32_t>{0, 8, 2, 3, 7, 9}));
  EXPECT_TRUE(h->bad_shards.empty());
  EXPECT_EQ(store_->RepairQueueSize(), 0u);
  auto g = Garbage(10);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(std::vector<uint32_t>(g[0].second.chunk().dss().begin(), g[0].second.chunk().dss().end()),
            (std::vector<uint32_t>{kNo, 1, kNo, kNo, kNo, kNo}));

  // A repair of a version that was replaced meanwhile is stale, and what it
  // wrote becomes garbage.
  const uint64_t v2 = WriteChunk(f, 3);
  ASSERT_GT(v2, a->chunk().version());
  rebuilt.set_dss(0, 10);
  EXPECT_EQ(store_->RecordRepair(f, rebuilt, {0}).code(), Code::kStale);
  g = Garbage(10);
  ASSERT_EQ(g.size(), 3u);  // the repaired version (replaced by v2) and the stale rebuild
  EXPECT_EQ(g.back().second.chunk().dss(0), 10u);
  EXPECT_EQ(g.back().second.chunk().dss(1), kNo);
  EXPECT_EQ(store_->GetChunkHealth(f, 3)->chunk.version(), v2);
}

TEST_F(MdsStoreTest, QueueChunksOnADssFindsEveryChunkItHolds) {
  uint64_t f = MustMake(kRootIno, "f", false);
  uint64_t g = MustMake(kRootIno, "g", false);
  for (uint64_t i = 0; i < 5; i++) ASSERT_NE(WriteChunk(f, i), 0u);  // on 1..6
  auto a = store_->AllocateChunk(g, 0, Fixed({7, 8, 9}));
  pb::CommitChunkReq c;
  c.set_ino(g);
  *c.mutable_chunk() = a->chunk();
  ASSERT_TRUE(store_->CommitChunk(c).has_value());
  EXPECT_EQ(*store_->QueueChunksOn(8), 1u);
  EXPECT_EQ(store_->RepairQueue(10), (std::vector<std::pair<uint64_t, uint64_t>>{{g, 0}}));
  EXPECT_EQ(*store_->QueueChunksOn(3), 5u);
  EXPECT_EQ(store_->RepairQueueSize(), 6u);
  // Paging with `after` walks the queue in order without repeats.
  auto first = store_->RepairQueue(4);
  ASSERT_EQ(first.size(), 4u);
  auto rest = store_->RepairQueue(10, first.back());
  EXPECT_EQ(rest.size(), 2u);
  EXPECT_LT(first.back(), rest.front());
  EXPECT_EQ(*store_->QueueChunksOn(42), 0u);
}

}  // namespace
}  // namespace rustfs::mds
