#include "optimized/cpu/thread_pool.hpp"

#include <algorithm>
#include <new>
#include <system_error>

#include "reference/error.hpp"

namespace akv::cpu {

ThreadPool::ThreadPool(int threads) : ThreadPool(threads, [](std::function<void()> body) { return std::thread(std::move(body)); }) {}

ThreadPool::ThreadPool(int threads, const Spawn& spawn) : n_(threads) {
  if (threads < 1 || threads > kMaxThreads)
    throw Error(ErrorCode::kBadInput,
                "threads: " + std::to_string(threads) + " outside [1, " + std::to_string(kMaxThreads) + "]");
  threads_.reserve(n_ - 1);
  for (int t = 1; t < n_; ++t) {
    try {
      threads_.push_back(spawn([this, t] { worker(t); }));
    } catch (const std::exception& e) {  // std::system_error (EAGAIN), std::bad_alloc
      const size_t started = threads_.size();
      stop_and_join();
      throw Error(ErrorCode::kOutOfResources, "cannot start " + std::to_string(n_) + " threads (" +
                                                  std::to_string(started + 1) + " running, then: " + e.what() + ")");
    }
  }
}

ThreadPool::~ThreadPool() { stop_and_join(); }

void ThreadPool::stop_and_join() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_.store(true, std::memory_order_release);
  }
  start_cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

namespace {
void range_of(int t, int n, int items, int& b, int& e) {
  b = static_cast<int>(static_cast<int64_t>(items) * t / n);
  e = static_cast<int>(static_cast<int64_t>(items) * (t + 1) / n);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls done() for at most `limit` (the clock read every 64 polls); true once it holds. After
// the first 256 polls each poll also yields the core: when other processes want the CPU (the
// test suite runs two at once on 2 cores) the spinner gives way instead of burning its slice.
template <class Done>
bool spin_until(const Done& done, std::chrono::microseconds limit) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (done()) return true;
    if (i < 256) cpu_relax();
    else std::this_thread::yield();
    if (i % 64 == 0 && std::chrono::steady_clock::now() - t0 > limit) return done();
  }
}
}  // namespace

void ThreadPool::worker(int t) {
  uint64_t seen = 0;
  for (;;) {
    auto started = [&] {
      return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
    };
    if (!spin_until(started, kSpin)) {
      // generation_ and stop_ change under mu_ as well, so this wait cannot miss them.
      std::unique_lock<std::mutex> g(mu_);
      start_cv_.wait(g, started);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    const std::function<void(int, int)>* job = job_;
    int b, e;
    range_of(t, n_, items_, b, e);
    if (b < e) {
      try {
        (*job)(b, e);
      } catch (...) {
        std::lock_guard<std::mutex> g(mu_);
        if (!error_) error_ = std::current_exception();
      }
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> g(mu_);  // the caller may be about to sleep: pair with its wait
      done_cv_.notify_one();
    }
  }
}

void ThreadPool::run(int items, const std::function<void(int, int)>& fn) {
  if (items <= 0) return;
  if (n_ == 1 || items == 1) {
    fn(0, items);
    return;
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    job_ = &fn;
    items_ = items;
    error_ = nullptr;
    pending_.store(n_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  start_cv_.notify_all();
  int b, e;
  range_of(0, n_, items, b, e);
  std::exception_ptr err;
  try {
    if (b < e) fn(b, e);
  } catch (...) {
    err = std::current_exception();
  }
  auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(done, kSpin)) {
    std::unique_lock<std::mutex> g(mu_);
    done_cv_.wait(g, done);
  }
  std::lock_guard<std::mutex> g(mu_);
  if (!err) err = error_;
  if (err) std::rethrow_exception(err);
}

}  // namespace akv::cpu
