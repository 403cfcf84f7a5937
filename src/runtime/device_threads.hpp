// One long-lived thread per device, for code that must run on every device
// of a mesh at once and may block waiting for its peers (shard_map callbacks
// inside collectives). Threads are started on first use and reused.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
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
  // A thread and its work. The caller writes the work, then bumps `posted`
  // and wakes the thread on it alone (a futex of its own: no lock shared
  // by all the threads, which each would take twice a run).
  struct Worker {
    std::thread thread;
    std::atomic<uint32_t> posted{0};
    const std::function<void(size_t)> *fn = nullptr;
    size_t index = 0;
    size_t side_by_side = 0;  // the threads of the run it is in
    bool stop = false;
  };
  void loop(Worker &w);
  Worker &worker(int device);  // under run_mu_
  void post(Worker &w);

  std::mutex run_mu_;  // one run at a time; guards workers_
  std::atomic<uint32_t> pending_{0};  // threads of the run not yet done
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace spmd
