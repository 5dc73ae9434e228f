#include "common/fd_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace rustfs {
namespace {

struct Pipe {
  int fd[2];
  Pipe() { EXPECT_EQ(::pipe(fd), 0); }
  ~Pipe() {
    if (fd[0] >= 0) ::close(fd[0]);
    if (fd[1] >= 0) ::close(fd[1]);
  }
  void CloseWriter() {
    ::close(fd[1]);
    fd[1] = -1;
  }
};

TEST(FdIo, ReadFullGathersShortReads) {
  Pipe p;
  const std::string msg = "0123456789abcdef";
  // The writer sends one byte at a time, so the reader sees short reads.
  std::thread writer([&] {
    for (char c : msg) ASSERT_EQ(::write(p.fd[1], &c, 1), 1);
  });
  std::string got(msg.size(), '\0');
  EXPECT_TRUE(ReadFull(p.fd[0], got.data(), got.size()));
  writer.join();
  EXPECT_EQ(got, msg);
}

TEST(FdIo, EndOfFileBeforeLenIsFalse) {
  Pipe p;
  ASSERT_EQ(::write(p.fd[1], "abc", 3), 3);
  p.CloseWriter();
  char buf[8] = {};
  EXPECT_FALSE(ReadFull(p.fd[0], buf, sizeof buf));
  EXPECT_EQ(std::string(buf, 3), "abc");
}

TEST(FdIo, ZeroLengthReadsNothing) {
  Pipe p;
  EXPECT_TRUE(ReadFull(p.fd[0], nullptr, 0));
}

TEST(FdIo, BadDescriptorIsFalse) {
  char c;
  EXPECT_FALSE(ReadFull(-1, &c, 1));
}

}  // namespace
}  // namespace rustfs
