// NUMA placement of the DSS io_uring completion pollers (LLD-002 §5.4).
//
// A poller spinning on a disk's completion ring should run on a core of the
// NUMA node that owns that disk's PCIe root complex, and its I/O buffers
// should live in that node's memory, so completions never cross the socket
// interconnect. Cores reserved for other work (GPU feeding threads on nodes
// that also compute) are never chosen.
//
// Topology comes from sysfs only; every function takes the sysfs root as a
// parameter so tests run against a fake tree in a temp directory.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace rustfs::dss {

// Parses the kernel's cpulist syntax ("0-3,8,10-11", as in
// /sys/devices/system/cpu/online). Leading/trailing whitespace and a trailing
// newline are accepted; "" (or only whitespace) is the empty list. Returns
// the CPU numbers sorted ascending without duplicates. A reversed range
// ("3-1"), an empty element ("1,,2"), a CPU number above 65535 or any other
// text is kInvalidArgument naming the text.
Result<std::vector<int>> ParseCpuList(std::string_view text);

// NUMA node of the block device major:minor, looked up under
// <sysfs_root>/dev/block/MAJ:MIN. Checks <dir>/device/numa_node, then
// <dir>/../device/numa_node (a partition's parent disk), then keeps walking
// up the device's real sysfs path for a `numa_node` (virtio and SCSI disks
// carry it on their PCI ancestor). The first value found is the answer.
// Returns -1 when unknown: no such device, no numa_node, or the kernel says
// -1.
int NumaNodeOfDevice(unsigned major, unsigned minor, const std::string& sysfs_root);

// NUMA node of the disk holding `path` (stat's st_dev, then
// NumaNodeOfDevice). -1 when unknown, including paths on filesystems
// without a block device (tmpfs, overlay, proc: major 0) and paths that do
// not exist.
int NumaNodeOfPath(const std::string& path, const std::string& sysfs_root = "/sys");

// CPUs of NUMA node `node`, from <sysfs_root>/devices/system/node/node<N>/cpulist.
// A memory-only node yields an empty list. kInvalidArgument for node < 0;
// the file's errno status when it cannot be read.
Result<std::vector<int>> CpusOfNode(int node, const std::string& sysfs_root = "/sys");

struct PinningOptions {
  std::string mode = "auto";  // dss.numa_pinning: "auto" | "manual" | "off"
  std::string data_dir;       // the disk's shard directory; its disk decides the node
  std::string reserved_cpus;  // cpulist never used for pollers ("" = none)
  int manual_cpu = -1;        // mode "manual": the CPU to pin to
  unsigned disk_index = 0;    // which disk of this DSS, so several disks spread over cores
  std::string sysfs_root = "/sys";
  std::vector<int> online_cpus;  // empty = read <sysfs_root>/devices/system/cpu/online
};

struct PollerPlacement {
  // Every CPU the DSS's I/O threads are spread over, the disk's own first
  // (empty: unpinned). Auto: the candidates rotated to start at the disk's,
  // so that a connection can be served on the CPU its packets arrive on
  // (net::RpcServer::PinThreads); manual: just the one CPU.
  std::vector<int> cpus;
  int node = -1;       // NUMA node of data_dir's disk (allocate its buffers there); -1 = unknown
  std::string reason;  // one human sentence for the startup log
  // The disk's own CPU, where the first I/O thread runs; -1 = unpinned.
  int cpu() const { return cpus.empty() ? -1 : cpus.front(); }
};

// "0,2,3" (the order given), or "none" for an empty list.
std::string JoinCpus(const std::vector<int>& cpus);

// Decides where one disk's poller runs. Pure apart from reading sysfs.
//   off:    no cpus.
//   manual: cpus {manual_cpu}; kInvalidArgument if it is < 0, not online, or
//           reserved.
//   auto:   the CPUs of data_dir's node (all online CPUs when the node is
//           unknown or has none) minus reserved_cpus, choosing
//           candidates[disk_index % size] first, then the other candidates
//           in order, wrapping. If every candidate is reserved, no cpus: an
//           unpinned poller is better than one stealing a reserved core.
// kInvalidArgument for an unknown mode or a malformed reserved_cpus.
Result<PollerPlacement> PlacePoller(const PinningOptions& o);

// `bytes` of page-aligned, zero-filled memory bound to NUMA node `node`
// (libnuma), or with the default policy when node < 0, libnuma is
// unavailable or the node does not exist. Returns nullptr on failure or
// bytes == 0. The caller owns the memory and must release it with
// FreeOnNode(ptr, bytes) with the same `bytes`, never free().
void* AllocOnNode(size_t bytes, int node);

// Makes node `node` the preferred node for the calling thread's future
// allocations and for threads it creates afterwards (set_mempolicy
// MPOL_PREFERRED via libnuma). The DSS calls it before it starts its
// threads, so request buffers, the batch arenas and the hot tier are local
// to the disk without a NUMA call per allocation. No-op when node < 0 or
// libnuma is unavailable.
void PreferNodeForNewMemory(int node);
void FreeOnNode(void* ptr, size_t bytes);

}  // namespace rustfs::dss
