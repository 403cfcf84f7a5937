#include "base/worker_pool.hpp"

#include <algorithm>
#include <system_error>

#include "base/error.hpp"

namespace spmd {

namespace {
// Set on pool threads and on a caller inside parallel_for, so nested calls
// run inline instead of waiting for a pool that is busy with their parent.
thread_local bool t_inside_pool = false;
}  // namespace

WorkerPool::WorkerPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads_.reserve(static_cast<size_t>(threads));
  for (int i = 1; i < threads; ++i) {
    try {
      threads_.emplace_back([this] { worker_loop(); });
    } catch (const std::system_error &e) {
      // The threads already started must not outlive a pool that was never
      // made (a joinable std::thread would end the process).
      stop_and_join();
      fail(SPMD_ERR_OUT_OF_MEMORY, "worker_threads: the system refused to start worker thread ",
           i + 1, " of ", threads, " (", e.what(), ")");
    } catch (...) {
      stop_and_join();
      throw;
    }
  }
}

WorkerPool::~WorkerPool() { stop_and_join(); }

void WorkerPool::stop_and_join() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto &t : threads_)
    if (t.joinable()) t.join();
}

// Takes items until none is left; records the first exception.
void WorkerPool::run_items() {
  for (;;) {
    size_t i;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ >= n_) return;
      i = next_++;
    }
    try {
      (*fn_)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (++finished_ == n_) done_cv_.notify_all();
  }
}

void WorkerPool::worker_loop() {
  t_inside_pool = true;
  size_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    ++active_;
    lock.unlock();
    run_items();
    lock.lock();
    if (--active_ == 0) done_cv_.notify_all();
  }
}

void WorkerPool::parallel_for(size_t n, const std::function<void(size_t)> &fn) {
  if (n == 0) return;
  if (n == 1 || threads_.empty() || t_inside_pool) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::lock_guard<std::mutex> call(call_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    next_ = 0;
    finished_ = 0;
    error_ = nullptr;
    ++generation_;
  }
  work_cv_.notify_all();
  t_inside_pool = true;
  run_items();
  t_inside_pool = false;
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Wait for every item, and for every worker to leave run_items, so the
    // next call cannot hand them a stale fn_.
    done_cv_.wait(lock, [&] { return finished_ == n_ && active_ == 0; });
    error = error_;
    fn_ = nullptr;
    n_ = 0;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace spmd
