// Cluster and random-read configuration: /etc/rustfs/random-read.toml, or the
// file named by --config. Sections and keys are LLD-002 §7's, plus what a
// cluster needs ([mds], [[dss]], [layout], [client]). Every key has an
// embedded default, so an empty file is a valid single-host config.
//
// Loading is strict: an unknown section or key, a value of the wrong type, a
// bad unit ("64KB"), a zero or negative size, or a layout that cannot be
// placed (K+M larger than the number of DSS) is refused with a message that
// names the key and the value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/units.h"

namespace rustfs {

inline constexpr const char* kDefaultConfigPath = "/etc/rustfs/random-read.toml";

struct DssEndpointConfig {
  std::string address;   // "host:port" the DSS listens on and clients dial
  std::string data_dir;  // folder holding this DSS's shard files

  bool operator==(const DssEndpointConfig&) const = default;
};

struct Config {
  struct Cluster {
    // The cluster key every connection authenticates with (net/auth.h): a
    // file of mode 0600. Empty: connections are not authenticated.
    // `rustfs cluster up` creates one and names it here.
    std::string key_file;
    bool operator==(const Cluster&) const = default;
  } cluster;

  struct Mds {
    std::string address = "127.0.0.1:9400";
    std::string data_dir = "/var/lib/rustfs/mds";
    uint32_t heartbeat_timeout_ms = 5000;  // a DSS silent this long is down
    // Client leases (attributes, entries, chunk maps) last this long without
    // renewal; a revocation waits at most this long for a silent client.
    uint32_t lease_ms = 10000;
    bool operator==(const Mds&) const = default;
  } mds;

  // [[dss]]: one entry per data server. Index in this list = DSS id.
  std::vector<DssEndpointConfig> dss;

  struct Layout {
    uint64_t chunk_size = 4 * kMiB;  // bytes; multiple of k * ec.stripe_unit
    std::string kind = "ec";         // "ec" | "replica"
    uint32_t k = 4;                  // data shards
    uint32_t m = 2;                  // parity shards
    uint32_t replicas = 3;           // for kind = "replica"
    // Fewest shards a chunk version is written with when servers are down
    // or full (the rest rebuilt by repair); 0 = K+1 (EC), 2 (replicas).
    uint32_t min_write_shards = 0;
    bool operator==(const Layout&) const = default;
  } layout;

  struct Repair {
    // A DSS silent this long has its shards rebuilt elsewhere (a shorter
    // absence, a restart, only leaves reads degraded meanwhile).
    uint32_t grace_ms = 600000;
    // Bytes per second repair and scrub read and write, all together.
    uint64_t max_bytes_per_s = 64 * kMiB;
    // A scrub pass (every shard read from disk, CRCs checked, what fails
    // repaired) starts this long after the last one ended (and after the
    // MDS starts); 0 = no scrub.
    uint32_t scrub_interval_s = 7 * 24 * 3600;
    bool operator==(const Repair&) const = default;
  } repair;

  struct RandomRead {
    bool prefetch_full_chunkmap = true;
    bool hold_layout_lease = true;
    bool operator==(const RandomRead&) const = default;
  } random_read;

  struct Ec {
    uint64_t stripe_unit = 64 * kKiB;  // bytes; multiple of 4 KiB
    bool partial_read_fast_path = true;
    bool operator==(const Ec&) const = default;
  } ec;

  struct FragmentCache {
    bool enabled = true;
    uint64_t grain_size = 64 * kKiB;  // bytes; power of two, >= 4 KiB
    uint64_t capacity = 8 * kGiB;     // bytes, per client
    std::string policy = "tinylfu";   // "tinylfu" | "lru"
    bool operator==(const FragmentCache&) const = default;
  } fragment_cache;

  struct DssHotTier {
    bool enabled = true;
    uint64_t capacity = 32 * kGiB;  // bytes, per DSS
    std::string policy = "tinylfu";  // "tinylfu" | "lru"
    bool operator==(const DssHotTier&) const = default;
  } dss_hot_tier;

  struct AccessPlan {
    bool enabled = true;                   // plans accepted (else refused with EOPNOTSUPP)
    uint32_t default_prefetch_depth = 64;  // entries ahead; >= 1
    // Bytes a plan may have fetched ahead of its readers; 0 = an eighth of
    // fragment_cache.capacity (the stream tier, where prefetched bytes go).
    uint64_t max_prefetch_bytes = 0;
    bool auto_detect = true;  // strided and index-file plans found without the application
    // A FUSE mount copies plan-fetched records into the kernel's page cache:
    // reading them then costs no FUSE request (every 8th stays out, so its
    // reads tell the plan where the readers are).
    bool kernel_handoff = true;
    bool operator==(const AccessPlan&) const = default;
  } access_plan;

  // Stand-ins for what this machine lacks, named as emulation wherever a
  // figure uses them (DESIGN.md §5). Off by default.
  struct Emulation {
    // Each DSS reply waits this long on a timer first (no thread blocked):
    // network distance, since tc netem is absent here.
    uint32_t dss_reply_delay_us = 0;
    bool operator==(const Emulation&) const = default;
  } emulation;

  struct RandomIo {
    uint32_t queue_depth = 1024;  // io_uring entries; 1..32768
    bool io_poll = true;
    uint64_t coalesce_gap_threshold = 16 * kKiB;  // bytes; may be 0
    // Where each DSS pins its io_uring completion poller (LLD-002 §5.4):
    // auto = a core of the data disk's NUMA node (from sysfs), manual = the
    // i-th CPU of poller_cpus for DSS i, off = not pinned.
    std::string numa_pinning = "auto";            // "auto" | "manual" | "off"
    std::string reserved_cores;                   // cpulist ("0,2-3") pollers never use
    std::string poller_cpus;                      // cpulist, for numa_pinning = "manual"
    bool operator==(const RandomIo&) const = default;
  } random_io;

  // The FUSE daemon (rustfs-fuse).
  struct Fuse {
    // Take requests through FUSE-over-io_uring rings (one per CPU) when the
    // kernel offers them (6.14+ with /sys/module/fuse/parameters/enable_uring
    // = 1); else, or when false, through /dev/fuse reads and writes.
    bool io_uring = true;
    // Requests in flight per CPU's ring; 1..1024. A deep queue from one
    // thread lands on one CPU's ring, and what exceeds it waits in the
    // kernel: cold QD32 x 4 gave 56-58 K reads/s at 128 vs 49 K at 32 (2
    // CPUs). Each entry maps a buffer of the kernel's largest request (1 MiB
    // + 4 KiB): virtual, resident only as far as large requests touch it.
    uint32_t ring_depth = 128;
    bool operator==(const Fuse&) const = default;
  } fuse;

  struct Client {
    uint32_t rpc_timeout_ms = 5000;  // per RPC; a DSS slower than this is treated as down
    // A shard read not answered within the recent p95 latency (but at least
    // hedge_min_us) is also served another way: another replica, or for EC
    // a degraded read from other shards; the slow one is abandoned.
    bool hedge_reads = true;
    uint32_t hedge_min_us = 2000;
    // How a caller waits for a DSS's reply: "poll" for it briefly before
    // sleeping (saves a wake-up, costs syscalls), "sleep", or "auto": poll
    // where a syscall is cheap (measured at start; net/reply_wait.h has the
    // figures behind it).
    std::string reply_wait = "auto";
    bool operator==(const Client&) const = default;
  } client;

  // The checksum block of shard files: the DSS verifies CRC32C per block.
  static constexpr uint64_t kChecksumBlock = 4096;

  // Field-wise, so the round-trip promise below can be checked directly.
  bool operator==(const Config&) const = default;
};

// Parses TOML text. `source` names the text in error messages (a path).
Result<Config> ParseConfig(std::string_view toml_text, std::string_view source);

// Reads and parses a file. A missing file is an error naming the path.
Result<Config> LoadConfigFile(const std::string& path);

// --config FILE if given; else /etc/rustfs/random-read.toml if it exists;
// else the embedded defaults (which have no [[dss]] entries).
Result<Config> LoadConfig(const std::string& path_or_empty);

// Checks cross-key rules (chunk_size % (k*stripe_unit) == 0, k+m <= #dss
// when any [[dss]] is listed, ...). ParseConfig calls it; exposed for tests
// and for programs that build a Config in code.
Status ValidateConfig(const Config& cfg);

// Serializes a config back to TOML (used by `rustfs cluster up` to write the
// cluster's config file). ParseConfig(ConfigToToml(c)) == c for a valid c.
std::string ConfigToToml(const Config& cfg);

}  // namespace rustfs
