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
    stop_ = true;
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
}  // namespace

void ThreadPool::worker(int t) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int, int)>* job;
    int items;
    {
      std::unique_lock<std::mutex> g(mu_);
      start_cv_.wait(g, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      items = items_;
    }
    int b, e;
    range_of(t, n_, items, b, e);
    std::exception_ptr err;
    if (b < e) {
      try {
        (*job)(b, e);
      } catch (...) {
        err = std::current_exception();
      }
    }
    std::lock_guard<std::mutex> g(mu_);
    if (err && !error_) error_ = err;
    if (--pending_ == 0) done_cv_.notify_one();
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
    pending_ = n_ - 1;
    error_ = nullptr;
    ++generation_;
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
  std::unique_lock<std::mutex> g(mu_);
  done_cv_.wait(g, [&] { return pending_ == 0; });
  if (!err) err = error_;
  if (err) std::rethrow_exception(err);
}

}  // namespace akv::cpu
