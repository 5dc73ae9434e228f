// NUMA pinning is checked against a fake sysfs tree in a temp directory (two
// nodes: node0 = cpus 0-1, node1 = cpus 2-3; cpu/online = 0-3) laid out like
// the kernel's: dev/block/MAJ:MIN symlinks into devices/, partitions under
// their disk, numa_node on a PCI ancestor for virtio. The cpulist parser is
// checked against a brute-force expansion.
#include "dss/numa_pinning.h"

#include <gtest/gtest.h>
#include <numa.h>
#include <numaif.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace rustfs::dss {
namespace {

namespace fs = std::filesystem;

void WriteFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

void Link(const fs::path& link, const std::string& target) {
  fs::create_directories(link.parent_path());
  fs::create_symlink(target, link);
}

class NumaPinningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/numa_pinning_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
    root_ = tmp_ / "sys";
    WriteFile(root_ / "devices/system/node/node0/cpulist", "0-1\n");
    WriteFile(root_ / "devices/system/node/node1/cpulist", "2-3\n");
    WriteFile(root_ / "devices/system/cpu/online", "0-3\n");
  }
  void TearDown() override { fs::remove_all(tmp_); }

  // The standard devices of the fake tree, by the numbers a kernel would use.
  void AddFixedDevices() {
    fs::path pci = root_ / "devices/pci0000:00";
    // NVMe disk on node 1 and its first partition (no device/ of its own).
    fs::path nvme0n1 = pci / "0000:00:04.0/nvme/nvme0/nvme0n1";
    WriteFile(nvme0n1 / "device/numa_node", "1\n");
    fs::create_directories(nvme0n1 / "nvme0n1p1");
    Link(root_ / "dev/block/259:0", "../../devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1");
    Link(root_ / "dev/block/259:1",
         "../../devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1/nvme0n1p1");
    // The kernel says -1; an ancestor saying 0 must not override it.
    WriteFile(pci / "0000:00:05.0/numa_node", "0\n");
    WriteFile(pci / "0000:00:05.0/nvme/nvme1/nvme1n1/device/numa_node", "-1\n");
    Link(root_ / "dev/block/259:2", "../../devices/pci0000:00/0000:00:05.0/nvme/nvme1/nvme1n1");
    // virtio: numa_node only on the PCI function above virtioN.
    WriteFile(pci / "0000:00:02.0/numa_node", "0\n");
    fs::create_directories(pci / "0000:00:02.0/virtio1/block/vda");
    Link(root_ / "dev/block/254:0", "../../devices/pci0000:00/0000:00:02.0/virtio1/block/vda");
    // A plain directory instead of a symlink, and one with garbage.
    WriteFile(root_ / "dev/block/8:16/device/numa_node", "1");
    WriteFile(root_ / "dev/block/8:32/device/numa_node", "node one\n");
    // A virtual device: no numa_node anywhere.
    fs::create_directories(root_ / "devices/virtual/block/loop0");
    Link(root_ / "dev/block/7:0", "../../devices/virtual/block/loop0");
  }

  // A directory on a real block device, or "" where every candidate is on
  // tmpfs/overlay (then tests needing a known node skip).
  static std::string DirOnBlockDevice(const fs::path& preferred) {
    std::vector<std::string> candidates = {
        preferred.string(), fs::read_symlink("/proc/self/exe").parent_path().string(), "/"};
    for (const auto& c : candidates) {
      struct stat st {};
      if (stat(c.c_str(), &st) == 0 && major(st.st_dev) != 0) return c;
    }
    return "";
  }

  // Makes the disk holding `dir` report NUMA node `node_text` in the fake tree.
  void SetNodeOfDiskHolding(const std::string& dir, const std::string& node_text) {
    struct stat st {};
    ASSERT_EQ(stat(dir.c_str(), &st), 0);
    std::string name = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
    WriteFile(root_ / "dev/block" / name / "device/numa_node", node_text + "\n");
  }

  PinningOptions Auto(const std::string& data_dir, const std::string& reserved,
                      unsigned disk_index) {
    PinningOptions o;
    o.mode = "auto";
    o.data_dir = data_dir;
    o.reserved_cpus = reserved;
    o.disk_index = disk_index;
    o.sysfs_root = root_.string();
    return o;
  }

  fs::path tmp_;
  fs::path root_;
};

std::vector<int> Parse(std::string_view s) {
  auto r = ParseCpuList(s);
  EXPECT_TRUE(r.has_value()) << s << ": " << r.error().ToString();
  return r.value_or(std::vector<int>{});
}

TEST(ParseCpuListTest, Examples) {
  EXPECT_EQ(Parse("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(Parse(""), std::vector<int>{});
  EXPECT_EQ(Parse(" \n"), std::vector<int>{});
  EXPECT_EQ(Parse("5\n"), std::vector<int>{5});
  EXPECT_EQ(Parse(" 0-1 , 3 \n"), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(Parse("7-7"), std::vector<int>{7});
  // Out of order and overlapping input comes back sorted and unique.
  EXPECT_EQ(Parse("3,1,1-2"), (std::vector<int>{1, 2, 3}));
}

TEST(ParseCpuListTest, MatchesBruteForceExpansion) {
  std::mt19937 rng(42);
  for (int iter = 0; iter < 2000; ++iter) {
    int n = 1 + static_cast<int>(rng() % 200);
    std::vector<bool> on(n);
    for (int i = 0; i < n; ++i) on[i] = rng() % 3 != 0;
    // Cut the set bits into runs, sometimes splitting a run in two, write
    // each run as "a" or "a-b", and shuffle the items.
    std::vector<std::string> items;
    for (int i = 0; i < n;) {
      if (!on[i]) {
        ++i;
        continue;
      }
      int j = i;
      while (j + 1 < n && on[j + 1] && rng() % 8 != 0) ++j;
      items.push_back(i == j ? std::to_string(i) : std::to_string(i) + "-" + std::to_string(j));
      i = j + 1;
    }
    std::shuffle(items.begin(), items.end(), rng);
    std::string text = rng() % 2 ? " " : "";
    for (size_t k = 0; k < items.size(); ++k) text += (k ? "," : "") + items[k];
    if (rng() % 2) text += "\n";

    std::vector<int> want;
    for (int i = 0; i < n; ++i) {
      if (on[i]) want.push_back(i);
    }
    ASSERT_EQ(Parse(text), want) << "text: " << text;
  }
}

TEST(ParseCpuListTest, RejectsGarbageNamingTheText) {
  for (std::string bad : {"3-1", "1,,2", ",1", "1,", "a", "1-", "-1", "1-2-3", "0x3", "+1", "1 2",
                          "2a", "99999999999", "70000", "0-70000", "1;2"}) {
    auto r = ParseCpuList(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(r.error().message().find(bad), std::string::npos) << r.error().message();
  }
  EXPECT_NE(ParseCpuList("3-1").error().message().find("reversed"), std::string::npos);
}

TEST_F(NumaPinningTest, NodeOfDevice) {
  AddFixedDevices();
  std::string root = root_.string();
  EXPECT_EQ(NumaNodeOfDevice(259, 0, root), 1);   // disk
  EXPECT_EQ(NumaNodeOfDevice(259, 1, root), 1);   // its partition, via the parent disk
  EXPECT_EQ(NumaNodeOfDevice(259, 2, root), -1);  // kernel says -1
  EXPECT_EQ(NumaNodeOfDevice(254, 0, root), 0);   // virtio: PCI ancestor
  EXPECT_EQ(NumaNodeOfDevice(8, 16, root), 1);    // plain directory
  EXPECT_EQ(NumaNodeOfDevice(8, 32, root), -1);   // garbage
  EXPECT_EQ(NumaNodeOfDevice(7, 0, root), -1);    // virtual: nothing anywhere
  EXPECT_EQ(NumaNodeOfDevice(9, 9, root), -1);    // no such device
  EXPECT_EQ(NumaNodeOfDevice(259, 0, (tmp_ / "nonexistent").string()), -1);
}

TEST_F(NumaPinningTest, NodeOfPath) {
  EXPECT_EQ(NumaNodeOfPath((tmp_ / "no/such/file").string(), root_.string()), -1);
  EXPECT_EQ(NumaNodeOfPath("/proc", root_.string()), -1);  // no block device
  std::string dir = DirOnBlockDevice(tmp_);
  if (dir.empty()) GTEST_SKIP() << "no directory on a block device here";
  EXPECT_EQ(NumaNodeOfPath(dir, root_.string()), -1);  // not in the fake tree yet
  SetNodeOfDiskHolding(dir, "1");
  EXPECT_EQ(NumaNodeOfPath(dir, root_.string()), 1);
}

TEST_F(NumaPinningTest, CpusOfNode) {
  EXPECT_EQ(CpusOfNode(0, root_.string()).value(), (std::vector<int>{0, 1}));
  EXPECT_EQ(CpusOfNode(1, root_.string()).value(), (std::vector<int>{2, 3}));
  auto missing = CpusOfNode(5, root_.string());
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), Code::kNotFound);
  EXPECT_EQ(CpusOfNode(-1, root_.string()).error().code(), Code::kInvalidArgument);
  WriteFile(root_ / "devices/system/node/node2/cpulist", "zero\n");
  auto bad = CpusOfNode(2, root_.string());
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("node2/cpulist"), std::string::npos);
}

TEST_F(NumaPinningTest, AutoPicksLocalCpusSkipsReservedAndSpreads) {
  std::string dir = DirOnBlockDevice(tmp_);
  if (dir.empty()) GTEST_SKIP() << "no directory on a block device here";
  SetNodeOfDiskHolding(dir, "1");

  std::vector<int> got;
  for (unsigned disk = 0; disk < 4; ++disk) {
    auto p = PlacePoller(Auto(dir, "", disk));
    ASSERT_TRUE(p.has_value()) << p.error().ToString();
    EXPECT_EQ(p->node, 1);
    got.push_back(p->cpu());
  }
  EXPECT_EQ(got, (std::vector<int>{2, 3, 2, 3}));  // node 1's cpus, round robin

  for (unsigned disk = 0; disk < 3; ++disk) {
    auto p = PlacePoller(Auto(dir, "0,2", disk));
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->cpu(), 3) << p->reason;
  }

  // Only offline cpus left on the node: cpu 2 is offline, 3 reserved.
  PinningOptions o = Auto(dir, "3", 0);
  o.online_cpus = {0, 1, 3};
  auto p = PlacePoller(o);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->cpu(), -1) << p->reason;

  auto all = PlacePoller(Auto(dir, "2-3", 1));
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->cpu(), -1);
  EXPECT_EQ(all->node, 1);
  EXPECT_NE(all->reason.find("reserved"), std::string::npos) << all->reason;
  EXPECT_NE(all->reason.find("not pinned"), std::string::npos) << all->reason;
}

TEST_F(NumaPinningTest, AutoUnknownNodeUsesAllOnlineCpus) {
  // /proc has no block device, so its node is unknown.
  std::vector<int> got;
  for (unsigned disk = 0; disk < 5; ++disk) {
    auto p = PlacePoller(Auto("/proc", "", disk));
    ASSERT_TRUE(p.has_value()) << p.error().ToString();
    EXPECT_EQ(p->node, -1);
    got.push_back(p->cpu());
  }
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3, 0}));
  // The I/O threads spread over every candidate, starting at the disk's own.
  EXPECT_EQ(PlacePoller(Auto("/proc", "", 2))->cpus, (std::vector<int>{2, 3, 0, 1}));
  EXPECT_EQ(PlacePoller(Auto("/proc", "0,2", 1))->cpus, (std::vector<int>{3, 1}));

  got.clear();
  for (unsigned disk = 0; disk < 3; ++disk)
    got.push_back(PlacePoller(Auto("/proc", "0,2", disk))->cpu());
  EXPECT_EQ(got, (std::vector<int>{1, 3, 1}));

  auto none = PlacePoller(Auto("/proc", "0-3", 0));
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->cpu(), -1) << none->reason;
  EXPECT_TRUE(none->cpus.empty());

  // A disk whose kernel node is -1 is unknown too.
  std::string dir = DirOnBlockDevice(tmp_);
  if (dir.empty()) return;
  SetNodeOfDiskHolding(dir, "-1");
  EXPECT_EQ(PlacePoller(Auto(dir, "1", 1))->cpu(), 2);  // of {0,2,3}
}

TEST_F(NumaPinningTest, AutoErrors) {
  auto bad = PlacePoller(Auto("/proc", "x", 0));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("\"x\""), std::string::npos) << bad.error().message();

  fs::remove(root_ / "devices/system/cpu/online");
  EXPECT_FALSE(PlacePoller(Auto("/proc", "", 0)).has_value());
  PinningOptions o = Auto("/proc", "", 1);
  o.online_cpus = {5, 4};  // given explicitly, the file is not needed
  EXPECT_EQ(PlacePoller(o)->cpu(), 5);
}

TEST_F(NumaPinningTest, ManualValidates) {
  PinningOptions o;
  o.mode = "manual";
  o.reserved_cpus = "2";
  o.sysfs_root = root_.string();
  o.manual_cpu = 3;
  auto p = PlacePoller(o);
  ASSERT_TRUE(p.has_value()) << p.error().ToString();
  EXPECT_EQ(p->cpu(), 3);
  EXPECT_EQ(p->cpus, std::vector<int>{3});
  for (int cpu : {-1, 4, 2}) {  // negative, not online, reserved
    o.manual_cpu = cpu;
    auto r = PlacePoller(o);
    ASSERT_FALSE(r.has_value()) << cpu;
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
    EXPECT_NE(r.error().message().find("cpu " + std::to_string(cpu)), std::string::npos);
  }
}

TEST_F(NumaPinningTest, OffAndUnknownMode) {
  PinningOptions o;
  o.mode = "off";
  o.manual_cpu = 1;
  o.reserved_cpus = "garbage";  // off reads nothing
  o.sysfs_root = (tmp_ / "nonexistent").string();
  auto p = PlacePoller(o);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->cpu(), -1);
  EXPECT_TRUE(p->cpus.empty());
  EXPECT_FALSE(p->reason.empty());

  o.mode = "on";
  auto r = PlacePoller(o);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("\"on\""), std::string::npos);
}

TEST(AllocOnNodeTest, WritableZeroedMemory) {
  EXPECT_EQ(AllocOnNode(0, 0), nullptr);
  const size_t bytes = 3 * 4096 + 5;
  for (int node : {0, -1}) {
    auto* p = static_cast<unsigned char*>(AllocOnNode(bytes, node));
    ASSERT_NE(p, nullptr) << node;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
    EXPECT_TRUE(std::all_of(p, p + bytes, [](unsigned char c) { return c == 0; }));
    for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(i * 7 + node);
    for (size_t i = 0; i < bytes; ++i) {
      ASSERT_EQ(p[i], static_cast<unsigned char>(i * 7 + node)) << i;
    }
    if (node == 0 && numa_available() >= 0) {
      int where = -1;
      ASSERT_EQ(get_mempolicy(&where, nullptr, 0, p, MPOL_F_NODE | MPOL_F_ADDR), 0);
      EXPECT_EQ(where, 0);  // the touched page really lives on node 0
    }
    FreeOnNode(p, bytes);
  }
  FreeOnNode(nullptr, bytes);  // harmless
}

}  // namespace
}  // namespace rustfs::dss
