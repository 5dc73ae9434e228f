// Adapters from typed MDS handlers to the RPC server's raw signature.
#pragma once

#include "net/rpc_server.h"
#include "rustfs.pb.h"

namespace rustfs::mds {

// `Result<Rep> fn(const Req&)` as a server handler: parses the body, runs
// fn, serializes the reply (or sends fn's error).
template <class Req, class Fn>
net::RpcServer::Handler Typed(Fn fn) {
  return [fn](const std::string& body, std::string&, net::RpcReply& reply) -> Status {
    auto req = net::ParseBody<Req>(body, "request");
    if (!req) return req.error();
    auto rep = fn(*req);
    if (!rep) return rep.error();
    rep->SerializeToString(&reply.body);
    return Status::Ok();
  };
}

template <class T>
Result<pb::AttrReply> WrapAttr(Result<T> a) {
  if (!a) return Err(a.error());
  pb::AttrReply r;
  *r.mutable_attr() = std::move(*a);
  return r;
}

inline Result<pb::Empty> WrapStatus(Status s) {
  if (!s.ok()) return Err(s);
  return pb::Empty{};
}

}  // namespace rustfs::mds
