// ResizeUninitialized: the size asked for, what was there kept; under
// AddressSanitizer the new bytes are poisoned (0xA5), so tests of the
// readers that use it see any byte they forget to write.
#include "common/uninit.h"

#include <gtest/gtest.h>

#include <string>

namespace rustfs {
namespace {

TEST(UninitTest, SizeIsWhatWasAskedAcrossGrowthAndShrinking) {
  // From every starting size (inline and heap strings) to every target:
  // libstdc++ 12 hands the operation a rounded-up capacity when the string
  // reallocates, which must not leak into the size.
  for (size_t from : {0, 1, 7, 15, 16, 24, 100, 5000}) {
    for (size_t to : {0, 1, 7, 15, 16, 24, 30, 100, 4096, 70000}) {
      std::string s(from, 'g');
      ResizeUninitialized(s, to);
      ASSERT_EQ(s.size(), to) << "from " << from;
      const size_t kept = std::min(from, to);
      EXPECT_EQ(s.compare(0, kept, std::string(kept, 'g')), 0) << from << " -> " << to;
      EXPECT_EQ(s.c_str()[to], '\0');  // still a string: terminated
    }
  }
}

TEST(UninitTest, NewBytesArePoisonedUnderAddressSanitizer) {
  std::string s = "abc";
  ResizeUninitialized(s, 4096);
#ifdef RUSTFS_POISON_UNINIT
  EXPECT_EQ(s.substr(3), std::string(4093, '\xA5'));
#else
  GTEST_SKIP() << "not an AddressSanitizer build: new bytes are left as the allocator gives them";
#endif
}

}  // namespace
}  // namespace rustfs
