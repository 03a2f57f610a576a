// A small fixed thread pool (spec/kernels-cpu.md K8): work is split by whole output items
// (rows, panels of output columns, (token, head) pairs), never inside a reduction, so the
// thread count changes which thread computes an item, never how. A decode token makes about
// 150 calls to run(); waking a sleeping thread costs tens of microseconds on a VM, so workers
// and the caller spin for a bounded time (kSpin), yielding the core after a few polls, before
// they sleep on a condition variable.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace akv::cpu {

/// The most threads a pool takes (spec/input.md IN4: --threads and $AKV_THREADS are checked
/// against it).
inline constexpr int kMaxThreads = 256;

class ThreadPool {
 public:
  /// Starts one thread running `body`; std::thread's constructor, or a test's that fails.
  using Spawn = std::function<std::thread(std::function<void()> body)>;

  /// `threads` in [1, kMaxThreads] workers in all, the calling thread included (else
  /// Error(kBadInput)). When a thread cannot start (std::system_error, std::bad_alloc), the
  /// ones already started are stopped and joined and Error(kOutOfResources) says
  /// "cannot start N threads" (spec/input.md IN7).
  explicit ThreadPool(int threads);
  ThreadPool(int threads, const Spawn& spawn);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_; }

  /// Calls fn(begin, end) on contiguous, disjoint ranges covering [0, items), at most one range
  /// per thread (range t = [t*items/size(), (t+1)*items/size())), and returns when all are done.
  /// The first exception thrown by any range is rethrown here. Not reentrant: one caller.
  void run(int items, const std::function<void(int, int)>& fn);

  /// How long an idle worker (and the caller waiting for the workers) polls before it sleeps.
  static constexpr std::chrono::microseconds kSpin{100};

 private:
  void worker(int t);
  void stop_and_join();

  int n_;
  std::vector<std::thread> threads_;
  std::mutex mu_;  // guards the sleeping side of the two handshakes and error_
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int, int)>* job_ = nullptr;  // written before generation_ is released
  int items_ = 0;
  std::atomic<uint64_t> generation_{0};  // one more per run(): the workers' start signal
  std::atomic<int> pending_{0};          // workers still on the current job
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
};

}  // namespace akv::cpu
