// A framed-RPC server over TCP on standalone Asio (C++20 coroutines).
//
// One coroutine per connection reads a frame, runs the method's handler and
// writes the reply, so replies on one connection come back in request order;
// clients get parallelism from several connections. Handlers run on the
// server's io threads and may block (disk I/O, RocksDB): size `threads` for
// the concurrency you want. A malformed or oversized frame closes only that
// connection; the server keeps serving the others.
//
// Threading::kShared: every thread serves every connection (one io_context):
// a handler that blocks long (the MDS waiting out a client's lease) holds up
// nobody else. Threading::kPerThread: each thread has its own io_context and
// connections are dealt out to them: a request is read, served and answered
// by one thread with no hand-over between threads (the DSS: its handlers
// block only for a disk read, and on this machine a thread wake-up costs more
// than the read's own work), at the price of a connection waiting when its
// thread is busy with another.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/metrics.h"
#include "common/status.h"
#include "net/frame.h"

namespace rustfs::net {

class RpcServer {
 public:
  // body: the serialized request message; payload: request payload bytes
  // (the handler may move from it). Fill `reply`; a non-OK Status is sent
  // back as the reply's code and message.
  using Handler = std::function<Status(const std::string& body, std::string& payload,
                                       RpcReply& reply)>;

  enum class Threading { kShared, kPerThread };
  // `name` prefixes this server's counters ("dss" -> dss.wire_bytes_sent).
  RpcServer(std::string name, int threads, Threading threading = Threading::kShared);
  ~RpcServer();

  // Register handlers before Start. M_STATS is built in.
  void Handle(uint32_t method, Handler h);
  // Runs first on every I/O thread Start makes (naming).
  void OnThreadStart(std::function<void()> fn);
  // Before Start. Thread i is pinned to cpus[i % cpus.size()] (-1: left
  // unpinned; a pin the kernel refuses is logged and the thread runs
  // unpinned). With kPerThread, a new connection then goes to a thread
  // pinned to the CPU its packets arrive on (SO_INCOMING_CPU at accept),
  // in turn among those, and only when there is none to the next thread in
  // turn. Why: on one host (a client beside its servers) that CPU is the
  // one the client dialled from, and a thread there is woken by a send on
  // its own CPU instead of through an interrupt to another (in a VM whose
  // idle vCPUs halt, 16 µs against 49 µs per request: cold QD1 reads 1.2x
  // native, 1.4-2x through FUSE, when client and server share a CPU);
  // over a NIC it is the CPU the NIC's queue interrupts, where the
  // connection's packets are already in cache.
  void PinThreads(std::vector<int> cpus);
  // Emulated network distance: every reply waits this long on a timer
  // before it is sent; the thread serves others meanwhile. Before Start.
  void SetReplyDelay(std::chrono::microseconds delay);

  // Binds "host:port" (port 0 picks a free one) and starts the io threads.
  Status Start(const std::string& address);
  void Stop();
  uint16_t port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Inside a handler: the IP address of the peer whose request it serves
// (as the server's socket sees it, not as the peer claims). Empty outside
// a handler.
const std::string& CurrentPeerIp();

// Parses "host:port" (IPv4 dotted or a name, or [v6]:port).
Result<std::pair<std::string, uint16_t>> SplitHostPort(const std::string& address);

}  // namespace rustfs::net
