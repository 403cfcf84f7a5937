#include "runtime/device_threads.hpp"

#include <system_error>

#include "base/error.hpp"
#include "base/side_by_side.hpp"

namespace spmd {

namespace {
thread_local bool t_device_thread = false;
}

DeviceThreads::DeviceThreads(int devices) : workers_(static_cast<size_t>(devices)) {}

DeviceThreads::~DeviceThreads() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &w : workers_)
      if (w) {
        w->stop = true;
        w->cv.notify_one();
      }
  }
  for (auto &w : workers_)
    if (w && w->thread.joinable()) w->thread.join();
}

bool DeviceThreads::on_device_thread() { return t_device_thread; }

DeviceThreads::Worker &DeviceThreads::worker(int device) {
  auto &slot = workers_.at(static_cast<size_t>(device));
  if (!slot) {
    auto w = std::make_unique<Worker>();
    Worker *raw = w.get();
    try {
      w->thread = std::thread([this, raw] { loop(*raw); });
    } catch (const std::system_error &e) {
      fail(SPMD_ERR_OUT_OF_MEMORY, "the system refused to start the thread of device ", device,
           " (", e.what(), "); shard_map needs one thread per device of the mesh");
    }
    slot = std::move(w);
  }
  return *slot;
}

void DeviceThreads::loop(Worker &w) {
  t_device_thread = true;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    w.cv.wait(lock, [&] { return w.stop || w.fn != nullptr; });
    if (w.stop) return;
    const auto *fn = w.fn;
    const size_t index = w.index;
    side_by_side::set(w.side_by_side);
    lock.unlock();
    (*fn)(index);
    lock.lock();
    side_by_side::set(0);
    w.fn = nullptr;
    if (--pending_ == 0) done_cv_.notify_all();
  }
}

void DeviceThreads::run(const std::vector<int> &devices, const std::function<void(size_t)> &fn) {
  if (t_device_thread)
    invalid("called from inside a shard_map callback or collective; shard_map and collectives "
            "cannot be nested");
  if (devices.empty()) return;
  std::lock_guard<std::mutex> call(run_mu_);
  std::vector<Worker *> woken;
  woken.reserve(devices.size());
  std::unique_lock<std::mutex> lock(mu_);
  // Every thread first: a device whose thread cannot start fails the call
  // before any work is handed out.
  for (int d : devices) woken.push_back(&worker(d));
  pending_ = devices.size();
  for (size_t i = 0; i < devices.size(); ++i) {
    woken[i]->fn = &fn;
    woken[i]->index = i;
    woken[i]->side_by_side = devices.size();
  }
  // Woken after the lock is released, so they do not wake into it.
  lock.unlock();
  for (Worker *w : woken) w->cv.notify_one();
  lock.lock();
  done_cv_.wait(lock, [&] { return pending_ == 0; });
}

}  // namespace spmd
