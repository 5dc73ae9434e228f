// LockTable against a brute-force model that keeps, for every byte of a
// small file, which owners hold which lock type there.
#include "mds/lock_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace rustfs::mds {
namespace {

// Requests start below kBytes; model byte kBytes stands for all of
// [kBytes, UINT64_MAX], which only ranges ending at UINT64_MAX reach.
constexpr uint64_t kBytes = 40;

struct Model {
  // [flock][byte] -> owner index -> type
  std::map<int, LockType> at[2][kBytes + 1];

  static uint64_t First(uint64_t start) { return std::min(start, kBytes); }
  static uint64_t Last(uint64_t end) { return std::min(end, kBytes); }
  bool Blocks(int owner, const Lock& l) const {
    for (uint64_t b = First(l.start); b <= Last(l.end); b++)
      for (auto [o, t] : at[l.flock][b])
        if (o != owner && (t == LockType::kWrite || l.type == LockType::kWrite)) return true;
    return false;
  }
  void Apply(int owner, const Lock& l) {
    for (uint64_t b = First(l.start); b <= Last(l.end); b++) {
      if (l.type == LockType::kUnlock) at[l.flock][b].erase(owner);
      else at[l.flock][b][owner] = l.type;
    }
  }
};

const LockOwner kOwners[] = {{1, 10}, {1, 11}, {2, 10}};  // owner 2 shares an id with owner 0

int OwnerIndex(const LockOwner& w) {
  for (int i = 0; i < 3; i++)
    if (kOwners[i] == w) return i;
  return -1;
}

// The table's locks, expanded per byte, must equal the model; and no two
// locks of one owner and type may touch (they are merged).
void ExpectSameState(LockTable& t, const Model& m, uint64_t ino) {
  Model got;
  auto held = t.Held(ino);
  for (const Lock& h : held) {
    int o = OwnerIndex(h.who);
    ASSERT_GE(o, 0);
    ASSERT_NE(h.type, LockType::kUnlock);
    for (uint64_t b = Model::First(h.start); b <= Model::Last(h.end); b++) {
      ASSERT_EQ(got.at[h.flock][b].count(o), 0u) << "overlapping locks of one owner at " << b;
      got.at[h.flock][b][o] = h.type;
    }
  }
  for (int f = 0; f < 2; f++)
    for (uint64_t b = 0; b <= kBytes; b++) ASSERT_EQ(got.at[f][b], m.at[f][b]) << "flock " << f << " byte " << b;
  for (size_t i = 0; i < held.size(); i++)
    for (size_t j = i + 1; j < held.size(); j++) {
      const Lock& a = held[i];
      const Lock& b = held[j];
      if (!(a.who == b.who) || a.flock != b.flock || a.type != b.type) continue;
      bool touch = (a.end == UINT64_MAX || a.end + 1 >= b.start) && (b.end == UINT64_MAX || b.end + 1 >= a.start);
      EXPECT_FALSE(touch) << "unmerged locks [" << a.start << "," << a.end << "] [" << b.start << "," << b.end << "]";
    }
}

TEST(LockTableTest, MatchesPerByteModel) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 40; round++) {
    LockTable t;
    Model m;
    for (int step = 0; step < 300; step++) {
      int o = int(rng() % 3);
      Lock l;
      l.who = kOwners[o];
      l.pid = 100 + o;
      l.type = LockType(rng() % 3);
      l.flock = rng() % 4 == 0;
      if (l.flock) {
        l.start = 0, l.end = UINT64_MAX;
      } else {
        l.start = rng() % kBytes;
        l.end = rng() % 5 == 0 ? UINT64_MAX : l.start + rng() % (kBytes - l.start);
      }
      const bool blocks = l.type != LockType::kUnlock && m.Blocks(o, l);
      auto tested = t.Test(5, l);
      if (l.type != LockType::kUnlock) {
        ASSERT_EQ(tested.has_value(), blocks)
            << "round " << round << " step " << step << " owner " << o << " type " << int(l.type)
            << " [" << l.start << "," << l.end << "] flock " << l.flock << " conflict ["
            << (tested ? tested->start : 0) << "," << (tested ? tested->end : 0) << "] owner "
            << (tested ? OwnerIndex(tested->who) : -1);
        if (tested) {  // what Test reports really is in the way
          EXPECT_FALSE(tested->who == l.who);
          EXPECT_TRUE(tested->type == LockType::kWrite || l.type == LockType::kWrite);
          EXPECT_FALSE(tested->end < l.start || l.end < tested->start);
        }
      }
      Lock conflict;
      Status s = t.Set(5, l, &conflict);
      if (blocks) {
        ASSERT_EQ(s.code(), Code::kWouldBlock);
        EXPECT_EQ(conflict.pid, uint32_t(100 + OwnerIndex(conflict.who)));
      } else {
        ASSERT_TRUE(s.ok()) << s.ToString();
        m.Apply(o, l);
      }
      ExpectSameState(t, m, 5);
      if (::testing::Test::HasFatalFailure()) return;
    }
    // A session's end releases all its owners' locks.
    t.DropSession(1);
    for (int f = 0; f < 2; f++)
      for (auto& b : m.at[f]) b.erase(0), b.erase(1);
    ExpectSameState(t, m, 5);
  }
}

TEST(LockTableTest, FcntlAndFlockAreIndependentAndInodesSeparate) {
  LockTable t;
  Lock w{{1, 1}, 10, LockType::kWrite, 0, UINT64_MAX, false};
  ASSERT_TRUE(t.Set(1, w).ok());
  Lock f{{2, 1}, 20, LockType::kWrite, 0, UINT64_MAX, true};
  EXPECT_TRUE(t.Set(1, f).ok());  // flock beside an fcntl lock: no conflict
  Lock other{{2, 1}, 20, LockType::kRead, 100, 200, false};
  EXPECT_EQ(t.Set(1, other).code(), Code::kWouldBlock);
  EXPECT_TRUE(t.Set(2, other).ok());  // another inode
  Lock bad = other;
  bad.start = 5, bad.end = 4;
  EXPECT_EQ(t.Set(2, bad).code(), Code::kInvalidArgument);
}

TEST(LockTableTest, SplitAndConvertOwnLock) {
  LockTable t;
  LockOwner me{1, 1};
  ASSERT_TRUE(t.Set(1, {me, 1, LockType::kWrite, 0, 99, false}).ok());
  ASSERT_TRUE(t.Set(1, {me, 1, LockType::kRead, 40, 59, false}).ok());  // convert the middle
  auto h = t.Held(1);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].start, 0u);
  EXPECT_EQ(h[0].end, 39u);
  EXPECT_EQ(h[0].type, LockType::kWrite);
  EXPECT_EQ(h[1].start, 40u);
  EXPECT_EQ(h[1].type, LockType::kRead);
  EXPECT_EQ(h[2].start, 60u);
  EXPECT_EQ(h[2].end, 99u);
  ASSERT_TRUE(t.Set(1, {me, 1, LockType::kUnlock, 0, UINT64_MAX, false}).ok());
  EXPECT_TRUE(t.Held(1).empty());
}

}  // namespace
}  // namespace rustfs::mds
