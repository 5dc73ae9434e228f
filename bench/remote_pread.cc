// remote_pread: the floor of a networked 4 KiB read on this machine.
//
// A server process (forked) answers "pread 4 KiB at offset X of FILE" over
// loopback TCP, one connection and one server thread per reader; each reader
// thread sends an 8-byte offset and waits for the 4 KiB. That is one network
// hop and one disk read per read, with none of rustfs's work: what any
// distributed file system's read costs at least here, beside fio on the
// local file (bench/iops.py prints it as a ceiling row). The hop's cost is
// mostly waking the thread at the other end (TARGETS.md), so both ways of
// waiting are offered:
//   --wait sleep  both sides block in recv (a wake-up per hop);
//   --wait poll   both sides poll recv (MSG_DONTWAIT) and sched_yield
//                 between polls, as rustfs's own short spins do.
//
// Prints one JSON line: iops, ios, bytes, errors, p50 and p99 (µs, every
// read timed). Asserts nothing about time.
//
//   remote_pread --file F [--threads 1] [--seconds 10] [--direct 1] [--wait sleep|poll]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

namespace {

constexpr size_t kRead = 4096;
using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& why) {
  fprintf(stderr, "remote_pread: %s\n", why.c_str());
  exit(2);
}

struct Opts {
  std::string file;
  unsigned threads = 1;
  double seconds = 10;
  bool direct = true;
  bool poll = false;
};

// Reads exactly n bytes. False on EOF or error. poll: MSG_DONTWAIT and a
// sched_yield between empty polls instead of sleeping in recv.
bool RecvAll(int fd, char* p, size_t n, bool poll) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, poll ? MSG_DONTWAIT : 0);
    if (r > 0) {
      p += r, n -= size_t(r);
    } else if (r == 0) {
      return false;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      sched_yield();
    } else if (errno != EINTR) {
      return false;
    }
  }
  return true;
}

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r, n -= size_t(r);
  }
  return true;
}

char* AlignedPage() {
  void* p = nullptr;
  if (posix_memalign(&p, kRead, kRead) != 0) Die("out of memory");
  return static_cast<char*>(p);
}

// The server process: one thread per connection, each answering pread
// requests until its reader hangs up.
[[noreturn]] void Serve(int listener, const Opts& o) {
  const int file = ::open(o.file.c_str(), O_RDONLY | (o.direct ? O_DIRECT : 0));
  if (file < 0) Die("server: open " + o.file + ": " + strerror(errno));
  std::vector<std::thread> ts;
  std::atomic<int> failed{0};
  for (unsigned t = 0; t < o.threads; t++) {
    const int c = ::accept(listener, nullptr, nullptr);
    if (c < 0) Die(std::string("server: accept: ") + strerror(errno));
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ts.emplace_back([&, c] {
      char* page = AlignedPage();
      uint64_t off;
      while (RecvAll(c, reinterpret_cast<char*>(&off), sizeof off, o.poll)) {
        if (::pread(file, page, kRead, off_t(off)) != ssize_t(kRead) || !SendAll(c, page, kRead)) {
          failed++;
          break;
        }
      }
      ::close(c);
      free(page);
    });
  }
  for (auto& t : ts) t.join();
  _exit(failed.load() ? 1 : 0);
}

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  CLI::App app{"remote_pread: 4 KiB preads of a local file over one loopback TCP hop (figures only)"};
  app.add_option("--file", o.file, "the file to read (4 KiB-aligned offsets)")->required();
  app.add_option("--threads", o.threads, "readers, one connection and server thread each")
      ->check(CLI::Range(1u, 256u));
  app.add_option("--seconds", o.seconds, "how long to read")->check(CLI::PositiveNumber);
  app.add_option("--direct", o.direct, "1: the server opens the file O_DIRECT");
  std::string wait = "sleep";
  app.add_option("--wait", wait, "sleep: both sides block in recv; poll: both poll it")
      ->check(CLI::IsMember({"sleep", "poll"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is not an error
  }
  o.poll = wait == "poll";
  struct stat st {};
  if (::stat(o.file.c_str(), &st) != 0) Die("stat " + o.file + ": " + strerror(errno));
  const uint64_t pages = uint64_t(st.st_size) / kRead;
  if (pages == 0) Die(o.file + " is smaller than one 4 KiB read");

  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, int(o.threads)) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    Die(std::string("listen on loopback: ") + strerror(errno));
  const pid_t server = fork();
  if (server < 0) Die(std::string("fork: ") + strerror(errno));
  if (server == 0) Serve(listener, o);
  ::close(listener);

  std::vector<int> socks;
  for (unsigned t = 0; t < o.threads; t++) {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      Die(std::string("connect: ") + strerror(errno));
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    socks.push_back(s);
  }
  std::vector<std::vector<int64_t>> lat(o.threads);
  std::atomic<bool> go{false};
  std::atomic<int> failed{0};
  const auto budget = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < o.threads; t++) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(std::random_device{}() ^ (uint64_t(t) << 32));
      char page[kRead];
      auto& mine = lat[t];
      mine.reserve(1 << 20);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const auto end = Clock::now() + budget;
      for (auto now = Clock::now(); now < end;) {
        const uint64_t off = (rng() % pages) * kRead;
        if (!SendAll(socks[t], reinterpret_cast<const char*>(&off), sizeof off) ||
            !RecvAll(socks[t], page, kRead, o.poll)) {
          failed++;
          return;
        }
        const auto done = Clock::now();
        mine.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(done - now).count());
        now = done;
      }
    });
  }
  const auto t0 = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& t : ts) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  for (int s : socks) ::close(s);  // the server's threads see EOF and end
  int status = 0;
  waitpid(server, &status, 0);
  const bool server_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;

  std::vector<int64_t> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  if (all.empty()) Die("no read completed");
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) { return double(all[std::min(all.size() - 1, size_t(p * double(all.size())))]) / 1000; };
  const int errors = failed.load() + (server_ok ? 0 : 1);
  printf("{\"iops\": %.1f, \"ios\": %zu, \"bytes\": %zu, \"errors\": %d, \"p50\": %.2f, \"p99\": %.2f}\n",
         double(all.size()) / secs, all.size(), all.size() * kRead, errors, pct(0.50), pct(0.99));
  return errors ? 1 : 0;
}
