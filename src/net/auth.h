// Who may talk to whom: every connection between rustfs processes (client
// to MDS and DSS, MDS to DSS and to clients' callback servers, DSS to MDS)
// starts with a mutual HMAC-SHA256 proof over the cluster key, a secret
// file `rustfs cluster up` creates (mode 0600) and the config names
// (cluster.key_file). The key never crosses the wire:
//
//   client -> server  "RFSC" | Nc | t | HMAC(k, "rustfs-client" | Nc | t)   (76 bytes)
//   server -> client  HMAC(k, "rustfs-server" | Nc | t)                      (32 bytes)
//
// Nc is 32 random bytes (OpenSSL RAND_bytes), t the client's clock (ms
// since the epoch, little endian). The client sends its hello and its first
// request at once and checks the server's proof before that request's
// reply, so a connection costs no extra round trip and a stalled server
// stalls only calls, which hedging already handles (a challenge the client
// had to wait for would block in connect instead). Freshness instead of a
// server challenge: the server refuses a t more than kMaxSkewMs from its own
// clock and an Nc it has seen within that window (replays). A peer whose
// hello is wrong (no key, another cluster's key, replayed, garbage) is
// disconnected before any request is served, and counted
// (<server>.auth_refused). With no key configured, nothing is exchanged.
//
// The key is process-wide: set once with UseClusterKey before any
// connection is made; thread-safe afterwards.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace rustfs::net {

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kProofBytes = 32;
inline constexpr size_t kHelloBytes = 4 + kNonceBytes + 8 + kProofBytes;
inline constexpr uint32_t kHelloMagic = 0x43534652;  // "RFSC" little endian
inline constexpr int64_t kMaxSkewMs = 120'000;       // clocks of one cluster agree within this
using Proof = std::array<uint8_t, kProofBytes>;

// Loads the key file (empty path: authentication off). Refused: a missing
// or unreadable file, fewer than 32 characters of key, or a file others
// can read (any group or other permission bit).
Status UseClusterKey(const std::string& key_file);
bool AuthEnabled();

// Writes a new random key (64 hex characters) to `path`, mode 0600.
Status CreateClusterKey(const std::string& path);

// Client: the hello to send first on a new connection, and the proof the
// server must answer with.
struct ClientHello {
  std::array<uint8_t, kHelloBytes> bytes;
  Proof expect;
};
ClientHello MakeClientHello();

// Server: checks a client's hello (kHelloBytes) and gives the proof to send
// back; kPermission naming why (wrong key, stale clock, replay, garbage).
Result<Proof> CheckClientHello(const uint8_t* hello);

// Constant-time comparison.
bool ProofEquals(const Proof& a, const uint8_t* b);

}  // namespace rustfs::net
