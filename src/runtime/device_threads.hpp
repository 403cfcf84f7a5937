// One long-lived thread per device, for code that must run on every device
// of a mesh at once and may block waiting for its peers (shard_map callbacks
// inside collectives). Threads are started on first use and reused.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace spmd {

class DeviceThreads {
 public:
  explicit DeviceThreads(int devices);
  ~DeviceThreads();
  DeviceThreads(const DeviceThreads &) = delete;
  DeviceThreads &operator=(const DeviceThreads &) = delete;

  // Runs fn(i) on the thread of devices[i], for every i at once (each
  // thread's side_by_side::threads() is devices.size() meanwhile), and
  // returns when all have returned. fn must not throw. Calls from several threads
  // run one after another; a call from a device thread throws
  // INVALID_ARGUMENT (it would wait for itself).
  void run(const std::vector<int> &devices, const std::function<void(size_t)> &fn);

  // True on a device thread.
  static bool on_device_thread();

 private:
  struct Worker {
    std::thread thread;
    std::condition_variable cv;
    const std::function<void(size_t)> *fn = nullptr;
    size_t index = 0;
    size_t side_by_side = 0;  // the threads of the run it is in
    bool stop = false;
  };
  void loop(Worker &w);
  Worker &worker(int device);  // under mu_

  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable done_cv_;
  size_t pending_ = 0;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace spmd
