// A fixed pool of worker threads, sized to the cores, that runs the
// per-shard pieces of one global operation (copies, kernels). The calling
// thread works too, so a pool of one thread adds no handoff.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace spmd {

class WorkerPool {
 public:
  // threads: total workers including the caller; 0 = hardware concurrency.
  // Throws OUT_OF_MEMORY naming the thread the system refused to start,
  // with every thread it did start stopped again.
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;

  int size() const { return static_cast<int>(threads_.size()) + 1; }

  // Runs fn(i) for i in [0, n), spread over the pool; returns when all are
  // done and rethrows the first exception any of them threw. Calls from
  // several threads are serialised; a call from inside fn runs inline.
  void parallel_for(size_t n, const std::function<void(size_t)> &fn);

 private:
  void worker_loop();
  void run_items();
  void stop_and_join();

  std::mutex call_mu_;  // one parallel_for at a time
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::vector<std::thread> threads_;
  const std::function<void(size_t)> *fn_ = nullptr;
  size_t n_ = 0;
  size_t next_ = 0;
  size_t finished_ = 0;
  size_t generation_ = 0;
  int active_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
};

}  // namespace spmd
