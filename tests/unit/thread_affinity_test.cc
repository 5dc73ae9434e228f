// PinCurrentThread is checked against sched_getaffinity of the real thread.
#include "common/thread_affinity.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <vector>

namespace rustfs {
namespace {

std::vector<int> ThreadCpus() {
  cpu_set_t set;
  EXPECT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

TEST(PinCurrentThreadTest, ChangesAffinityAndRestores) {
  cpu_set_t original;
  ASSERT_EQ(sched_getaffinity(0, sizeof(original), &original), 0);
  if (!CPU_ISSET(0, &original)) GTEST_SKIP() << "cpu 0 not allowed here";
  std::vector<int> before = ThreadCpus();

  ASSERT_TRUE(PinCurrentThread(-1).ok());
  EXPECT_EQ(ThreadCpus(), before);  // -1 leaves it alone

  Status st = PinCurrentThread(0);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ThreadCpus(), std::vector<int>{0});
  EXPECT_EQ(sched_getcpu(), 0);

  EXPECT_FALSE(PinCurrentThread(CPU_SETSIZE + 1).ok());
  // A cpu this machine does not have.
  if (!CPU_ISSET(CPU_SETSIZE - 1, &original)) {
    EXPECT_FALSE(PinCurrentThread(CPU_SETSIZE - 1).ok());
  }
  EXPECT_EQ(ThreadCpus(), std::vector<int>{0});  // a failed pin changes nothing

  ASSERT_EQ(sched_setaffinity(0, sizeof(original), &original), 0);
  EXPECT_EQ(ThreadCpus(), before);
}

}  // namespace
}  // namespace rustfs
