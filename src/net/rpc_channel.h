// Client side of the framed RPC: a pool of blocking TCP connections to one
// server. A call checks a connection out, sends, and (in Wait) reads the
// reply, so a caller fans out to many servers by starting every call before
// waiting on any: one round trip of wall time for N servers, no threads.
//
// Every socket has send/receive timeouts (timeout_ms); a timeout, reset or
// refused connection is Code::kUnavailable and the connection is dropped.
#pragma once

#include <google/protobuf/message.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <string>
#include <string_view>
#include <vector>

#include "common/metrics.h"
#include "common/status.h"
#include "net/auth.h"
#include "net/frame.h"

namespace rustfs::net {

// How one call's reply arrives; each transport has its own (TcpCall for
// RpcChannel). Owned by the PendingCall.
class CallState {
 public:
  virtual ~CallState() = default;
  virtual bool Ready(int timeout_ms) = 0;
  virtual Result<RpcReply> Wait() = 0;
};

// A call in flight. Holds its transport state until Wait(); a PendingCall
// destroyed without Wait() abandons the call (for TCP: drops the
// connection, whose reply is unread).
class PendingCall {
 public:
  PendingCall() = default;
  // A call that was never sent, failing with `why`.
  explicit PendingCall(Status why) : send_status_(std::move(why)) {}
  explicit PendingCall(std::unique_ptr<CallState> state)
      : state_(std::move(state)), send_status_(Status::Ok()) {}

  // Reads the reply. A reply whose code is not OK becomes that Status.
  Result<RpcReply> Wait();
  // Whether Wait() would return without blocking for the server (a reply,
  // or an error, is there), waiting up to timeout_ms for that.
  bool Ready(int timeout_ms) { return !state_ || state_->Ready(timeout_ms); }
  // False for a call that never left this process (no connection, or no
  // whole frame written): the server cannot have acted on it, so doing it
  // again is safe whatever it does. Valid until Wait().
  bool sent() const { return state_ != nullptr; }

 private:
  std::unique_ptr<CallState> state_;
  // A default-constructed call was never sent (e.g. its server is known down).
  Status send_status_{Code::kUnavailable, "call not sent: server marked down"};
};

// The client side of the RPC to one server: what the data path needs of a
// transport. RpcChannel is the TCP one; an RDMA transport (LLD-002 §5.2:
// the batch as one SGL, replies into registered memory) would implement
// Start with its own CallState, and the client code above it stays as is.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual const std::string& address() const = 0;
  virtual PendingCall Start(uint32_t method, const google::protobuf::Message& req,
                            std::string_view payload = {}) = 0;
  Result<RpcReply> Call(uint32_t method, const google::protobuf::Message& req,
                        std::string_view payload = {}) {
    return Start(method, req, payload).Wait();
  }
};

// Transport over a pool of blocking TCP connections (see the top of the file).
class RpcChannel : public Transport {
 public:
  // `counter_prefix` names this side's wire counters ("client").
  // `poll_replies`: a caller polls for its reply briefly before sleeping
  // for it (net/reply_wait.h decides; rpc_channel.cc says when it polls).
  RpcChannel(std::string address, int timeout_ms, std::string counter_prefix = "client",
             bool poll_replies = false);
  ~RpcChannel();
  RpcChannel(const RpcChannel&) = delete;
  RpcChannel& operator=(const RpcChannel&) = delete;

  const std::string& address() const override { return address_; }

  PendingCall Start(uint32_t method, const google::protobuf::Message& req,
                    std::string_view payload = {}) override;
  using Transport::Call;

  // Call and parse the reply body as Rep.
  template <class Rep>
  Result<Rep> CallTyped(uint32_t method, const google::protobuf::Message& req,
                        std::string* payload_out = nullptr, std::string_view payload = {}) {
    auto r = Call(method, req, payload);
    if (!r) return Err(r.error());
    if (payload_out) *payload_out = std::move(r->payload);
    return ParseBody<Rep>(r->body, "reply");
  }

 private:
  friend class TcpCall;
  // A connection dialled from `cpu` (the caller's CPU now), idle or new.
  Result<int> Checkout(int cpu);
  void Checkin(int fd, int cpu);
  Result<int> Dial();
  // The server proof a new connection still owes (auth.h), taken once.
  std::optional<Proof> TakeProofDue(int fd);

  std::string address_;
  int timeout_ms_;
  bool poll_replies_;
  std::mutex mu_;
  // Idle connections by the CPU they were dialled from, each most recently
  // used last. A call takes one dialled from the CPU it runs on: a server
  // that serves each connection on the CPU its packets arrive on
  // (RpcServer::PinThreads) then answers it on the caller's CPU when both
  // share a host.
  std::vector<std::vector<int>> idle_;
  // New connections whose server proof is not read yet (its first reply).
  // A closed fd's entry is overwritten when the number is dialled again.
  std::unordered_map<int, Proof> proof_due_;
  uint64_t next_id_ = 1;
  Counter& wire_sent_;
  Counter& wire_received_;
  Counter& rpcs_;
};

}  // namespace rustfs::net
