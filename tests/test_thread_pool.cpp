// The cpu backend's thread pool (optimized/cpu/thread_pool.*, spec/kernels-cpu.md K8): every
// item exactly once, in the documented ranges, whether the workers are spinning or asleep, and
// a worker's exception reaches the caller without losing the pool.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "optimized/cpu/thread_pool.hpp"

using namespace akv;

TEST(K8_ThreadPool, EveryItemOnceInTheDocumentedRangesSpinningOrAsleep) {
  for (int threads : {2, 3, 5}) {
    cpu::ThreadPool pool(threads);
    for (int round = 0; round < 400; ++round) {
      const int items = 1 + (round * 7) % 23;
      std::vector<std::atomic<int>> hit(static_cast<size_t>(items));
      std::vector<std::pair<int, int>> ranges(static_cast<size_t>(threads), {-1, -1});
      std::atomic<int> calls{0};
      pool.run(items, [&](int b, int e) {
        ++calls;
        for (int t = 0; t < threads; ++t)  // the range must be one of the documented ones
          if (b == static_cast<int>(static_cast<int64_t>(items) * t / threads)) ranges[static_cast<size_t>(t)] = {b, e};
        for (int i = b; i < e; ++i) ++hit[static_cast<size_t>(i)];
      });
      for (int i = 0; i < items; ++i) ASSERT_EQ(hit[static_cast<size_t>(i)].load(), 1) << "item " << i << " round " << round;
      int nonempty = 0;
      for (int t = 0; t < threads; ++t) {
        const int b = static_cast<int>(static_cast<int64_t>(items) * t / threads),
                  e = static_cast<int>(static_cast<int64_t>(items) * (t + 1) / threads);
        if (b < e) {
          ++nonempty;
          ASSERT_EQ(ranges[static_cast<size_t>(t)], (std::pair{b, e})) << "thread " << t << " round " << round;
        }
      }
      ASSERT_EQ(calls.load(), items == 1 ? 1 : nonempty);
      // Every 50th round waits past the spin, so the next run must wake sleeping workers.
      if (round % 50 == 49) std::this_thread::sleep_for(cpu::ThreadPool::kSpin * 20);
    }
  }
}

TEST(K8_ThreadPool, AWorkersExceptionReachesTheCallerAndThePoolGoesOn) {
  cpu::ThreadPool pool(3);
  for (int round = 0; round < 50; ++round) {
    const int thrower = round % 3;  // range 0 is the caller's, 1 and 2 the workers'
    EXPECT_THROW(pool.run(3,
                          [&](int b, int) {
                            if (b == thrower) throw std::runtime_error("item " + std::to_string(b));
                          }),
                 std::runtime_error);
    std::atomic<int> n{0};
    pool.run(9, [&](int b, int e) { n += e - b; });
    ASSERT_EQ(n.load(), 9) << "round " << round;
    if (round % 10 == 9) std::this_thread::sleep_for(cpu::ThreadPool::kSpin * 20);
  }
}
