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
#include <map>
#include <mutex>
#include <sstream>

#include "common/clock.h"

namespace rustfs::net {

namespace {
std::string g_key;  // written once by UseClusterKey, before any connection

Proof Mac(const char* role, std::string_view nonce_and_time) {
  std::string msg(role);
  msg.append(nonce_and_time);
  Proof out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), g_key.data(), int(g_key.size()), reinterpret_cast<const unsigned char*>(msg.data()),
       msg.size(), out.data(), &len);
  return out;
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

ClientHello MakeClientHello() {
  ClientHello h{};
  uint8_t* p = h.bytes.data();
  std::memcpy(p, &kHelloMagic, 4);
  if (RAND_bytes(p + 4, int(kNonceBytes)) != 1) std::abort();  // no randomness: nothing is safe
  const int64_t t = RealtimeNowNs() / 1'000'000;
  std::memcpy(p + 4 + kNonceBytes, &t, 8);
  const std::string_view nt(reinterpret_cast<const char*>(p + 4), kNonceBytes + 8);
  const Proof mine = Mac("rustfs-client", nt);
  std::memcpy(p + 4 + kNonceBytes + 8, mine.data(), mine.size());
  h.expect = Mac("rustfs-server", nt);
  return h;
}

Result<Proof> CheckClientHello(const uint8_t* hello) {
  uint32_t magic;
  std::memcpy(&magic, hello, 4);
  if (magic != kHelloMagic) return Err({Code::kPermission, "no cluster-key hello"});
  const std::string_view nt(reinterpret_cast<const char*>(hello + 4), kNonceBytes + 8);
  if (!ProofEquals(Mac("rustfs-client", nt), hello + 4 + kNonceBytes + 8))
    return Err({Code::kPermission, "wrong cluster key"});
  int64_t t;
  std::memcpy(&t, hello + 4 + kNonceBytes, 8);
  const int64_t now = RealtimeNowNs() / 1'000'000;
  if (t < now - kMaxSkewMs || t > now + kMaxSkewMs)
    return Err({Code::kPermission, "hello stamped " + std::to_string((t - now) / 1000) + " s off this clock"});
  {
    // Nonces seen within the window: a recorded hello replayed is refused.
    static std::mutex mu;
    static std::map<std::string, int64_t> seen;  // nonce -> when it may be forgotten (ms)
    std::lock_guard lk(mu);
    for (auto it = seen.begin(); it != seen.end();) it = it->second < now ? seen.erase(it) : std::next(it);
    if (!seen.emplace(std::string(nt.substr(0, kNonceBytes)), now + 2 * kMaxSkewMs).second)
      return Err({Code::kPermission, "replayed hello"});
  }
  return Mac("rustfs-server", nt);
}

bool ProofEquals(const Proof& a, const uint8_t* b) { return CRYPTO_memcmp(a.data(), b, a.size()) == 0; }

}  // namespace rustfs::net
