// Who may talk to whom: every connection between rustfs processes (client
// to MDS and DSS, MDS to DSS and to clients' callback servers, DSS to MDS)
// starts with a mutual HMAC-SHA256 challenge-response over the cluster key,
// a secret file `rustfs cluster up` creates (mode 0600) and the config
// names (cluster.key_file). The key never crosses the wire:
//
//   server -> client  "RFSA" | Ns            (36 bytes, sent on accept)
//   client -> server  Nc | HMAC(k, "rustfs-client" | Ns | Nc)   (64 bytes)
//   server -> client  HMAC(k, "rustfs-server" | Ns | Nc)        (32 bytes)
//
// Ns and Nc are 32 random bytes each (OpenSSL RAND_bytes). A peer whose
// proof is wrong (no key, another cluster's key) is disconnected before it
// can send a request, and counted (<server>.auth_refused); a client checks
// the server's proof before trusting its replies. With no key configured,
// no handshake happens (a cluster whose config names none).
//
// The key is process-wide: set once with UseClusterKey before any
// connection is made; thread-safe to read afterwards.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace rustfs::net {

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kProofBytes = 32;
inline constexpr uint32_t kAuthMagic = 0x41534652;  // "RFSA" little endian
using Nonce = std::array<uint8_t, kNonceBytes>;
using Proof = std::array<uint8_t, kProofBytes>;

// Loads the key file (empty path: authentication off). Refused: a missing
// or unreadable file, fewer than 32 characters of key, or a file others
// can read (any group or other permission bit).
Status UseClusterKey(const std::string& key_file);
bool AuthEnabled();

// Writes a new random key (64 hex characters) to `path`, mode 0600.
Status CreateClusterKey(const std::string& path);

Nonce NewNonce();
// The client's proof for server nonce ns and client nonce nc, and the server's.
Proof ClientProof(const Nonce& ns, const Nonce& nc);
Proof ServerProof(const Nonce& ns, const Nonce& nc);
// Constant-time comparison.
bool ProofEquals(const Proof& a, const uint8_t* b);

// The client's half on a connected blocking socket (its SO_RCVTIMEO bounds
// each read). kUnavailable when the server does not answer as it should.
Status AuthenticateToServer(int fd);

}  // namespace rustfs::net
