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
  for (auto &w : workers_)
    if (w) {
      w->stop = true;
      post(*w);
    }
  for (auto &w : workers_)
    if (w && w->thread.joinable()) w->thread.join();
}

bool DeviceThreads::on_device_thread() { return t_device_thread; }

void DeviceThreads::post(Worker &w) {
  w.posted.fetch_add(1, std::memory_order_release);
  w.posted.notify_one();
}

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
  uint32_t seen = 0;
  for (;;) {
    w.posted.wait(seen, std::memory_order_acquire);
    seen = w.posted.load(std::memory_order_acquire);
    if (w.stop) return;
    side_by_side::set(w.side_by_side);
    (*w.fn)(w.index);
    side_by_side::set(0);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
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
  // Every thread first: a device whose thread cannot start fails the call
  // before any work is handed out.
  for (int d : devices) woken.push_back(&worker(d));
  pending_.store(static_cast<uint32_t>(devices.size()), std::memory_order_relaxed);
  for (size_t i = 0; i < devices.size(); ++i) {
    woken[i]->fn = &fn;
    woken[i]->index = i;
    woken[i]->side_by_side = devices.size();
    post(*woken[i]);
  }
  for (uint32_t left = pending_.load(std::memory_order_acquire); left != 0;
       left = pending_.load(std::memory_order_acquire))
    pending_.wait(left, std::memory_order_acquire);
}

}  // namespace spmd
