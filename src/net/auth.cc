#include "net/auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/fd_io.h"

namespace rustfs::net {

namespace {
std::string g_key;  // written once by UseClusterKey, before any connection

Proof Mac(const char* role, const Nonce& ns, const Nonce& nc) {
  std::string msg(role);
  msg.append(reinterpret_cast<const char*>(ns.data()), ns.size());
  msg.append(reinterpret_cast<const char*>(nc.data()), nc.size());
  Proof out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), g_key.data(), int(g_key.size()), reinterpret_cast<const unsigned char*>(msg.data()),
       msg.size(), out.data(), &len);
  return out;
}

bool WriteAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= size_t(w);
  }
  return true;
}
}  // namespace

Status UseClusterKey(const std::string& key_file) {
  g_key.clear();
  if (key_file.empty()) return Status::Ok();
  struct stat st {};
  if (::stat(key_file.c_str(), &st) != 0) return Status::FromErrno(errno, "cluster key file " + key_file);
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    return InvalidArgument("cluster key file " + key_file + " is open to other users (mode " + mode +
                           "): chmod 600 it");
  }
  std::ifstream in(key_file);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string key = ss.str();
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) key.pop_back();
  if (!in || key.size() < 32)
    return InvalidArgument("cluster key file " + key_file + " holds no key of at least 32 characters");
  g_key = std::move(key);
  return Status::Ok();
}

bool AuthEnabled() { return !g_key.empty(); }

Status CreateClusterKey(const std::string& path) {
  uint8_t raw[32];
  if (RAND_bytes(raw, sizeof raw) != 1) return Internal("RAND_bytes failed");
  std::string hex;
  static const char* kDigits = "0123456789abcdef";
  for (uint8_t b : raw) {
    hex.push_back(kDigits[b >> 4]);
    hex.push_back(kDigits[b & 15]);
  }
  hex.push_back('\n');
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno(errno, "create cluster key " + path);
  const bool ok = ::write(fd, hex.data(), hex.size()) == ssize_t(hex.size()) && ::fsync(fd) == 0;
  ::close(fd);
  return ok ? Status::Ok() : Status::FromErrno(errno, "write cluster key " + path);
}

Nonce NewNonce() {
  Nonce n{};
  if (RAND_bytes(n.data(), int(n.size())) != 1) std::abort();  // no randomness: nothing is safe
  return n;
}

Proof ClientProof(const Nonce& ns, const Nonce& nc) { return Mac("rustfs-client", ns, nc); }
Proof ServerProof(const Nonce& ns, const Nonce& nc) { return Mac("rustfs-server", ns, nc); }

bool ProofEquals(const Proof& a, const uint8_t* b) { return CRYPTO_memcmp(a.data(), b, a.size()) == 0; }

Status AuthenticateToServer(int fd) {
  if (!AuthEnabled()) return Status::Ok();
  uint8_t hello[4 + kNonceBytes];
  if (!ReadFull(fd, hello, sizeof hello))
    return Unavailable("authentication: the server sent no challenge (is it another cluster's, or keyless?)");
  uint32_t magic;
  std::memcpy(&magic, hello, 4);
  if (magic != kAuthMagic) return Unavailable("authentication: the server's challenge is malformed");
  Nonce ns, nc = NewNonce();
  std::memcpy(ns.data(), hello + 4, ns.size());
  const Proof mine = ClientProof(ns, nc);
  uint8_t out[kNonceBytes + kProofBytes];
  std::memcpy(out, nc.data(), nc.size());
  std::memcpy(out + nc.size(), mine.data(), mine.size());
  if (!WriteAll(fd, out, sizeof out)) return Unavailable("authentication: send failed");
  uint8_t theirs[kProofBytes];
  if (!ReadFull(fd, theirs, sizeof theirs))
    return Unavailable("authentication refused by the server (wrong cluster key?)");
  if (!ProofEquals(ServerProof(ns, nc), theirs))
    return Unavailable("authentication: the server does not hold the cluster key");
  return Status::Ok();
}

}  // namespace rustfs::net
