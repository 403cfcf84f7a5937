#include "runtime/runtime.hpp"

#include <algorithm>
#include <typeinfo>

#include "base/error.hpp"
#include "runtime/device_threads.hpp"
#include "runtime/local_devices.hpp"
#include "runtime/platforms.hpp"

namespace spmd {

Runtime::Runtime(std::shared_ptr<Backend> backend)
    : backend_(std::move(backend)),
      processes_(single_process(*backend_)),
      device_count_(processes_.local_devices) {}

Runtime::Runtime(std::shared_ptr<Backend> local, Processes processes)
    : processes_(std::move(processes)),
      device_count_(processes_.count * processes_.local_devices),
      first_local_(processes_.first_local_device()) {
  // One process of a distributed runtime holds every device itself.
  if (processes_.count > 1)
    backend_ = std::make_shared<LocalDevices>(std::move(local), processes_.index);
  else
    backend_ = std::move(local);
}

std::shared_ptr<Runtime> Runtime::create(const spmd_runtime_options &o) {
  // Every option is checked before the processes meet, so that options
  // every process gets wrong fail at once, everywhere.
  const bool distributed = distributed_from(o);
  std::shared_ptr<Backend> local = make_backend(o);
  if (!distributed) return std::make_shared<Runtime>(std::move(local));
  Processes processes = join_processes(o, *local);
  return std::make_shared<Runtime>(std::move(local), std::move(processes));
}

Runtime &Runtime::of(const DeviceSet &devices) {
  // Every DeviceSet a handle can reach is a Runtime (a final class, so the
  // type check is one comparison); anything else is a bug.
  if (typeid(devices) != typeid(Runtime))
    fail(SPMD_ERR_INTERNAL, "the mesh's devices do not belong to a runtime");
  return const_cast<Runtime &>(static_cast<const Runtime &>(devices));
}

DeviceInfo Runtime::device_info(int device) const {
  check_device("device_id", device);
  DeviceInfo info;
  info.id = device;
  info.platform = backend_->platform();
  info.platform_name = backend_->platform_name();
  info.process_index = processes_.process_of(device);
  info.local_index = device % processes_.local_devices;
  if (is_local(device)) {
    info.kind = backend_->device_kind(device);
    info.memory_bytes = backend_->device_memory_bytes(device);
    info.compute_capability = backend_->device_compute_capability(device);
  } else {
    // What its process said of its devices when the runtime was made.
    const ProcessDevices &d = processes_.described.at(static_cast<size_t>(info.process_index));
    info.kind = d.kind.c_str();
    info.memory_bytes = d.memory_bytes;
    info.compute_capability = d.compute_capability;
  }
  return info;
}

std::vector<int> Runtime::processes_of(std::span<const int> devices) const {
  std::vector<int> processes;
  for (int d : devices) processes.push_back(process_of(d));
  std::sort(processes.begin(), processes.end());
  processes.erase(std::unique(processes.begin(), processes.end()), processes.end());
  return processes;
}

int Runtime::next_exchange_tag(const std::vector<int> &processes) {
  uint64_t n;
  {
    std::lock_guard<std::mutex> lock(exchanges_mu_);
    n = exchanges_[processes]++;
  }
  // The set's start: a hash of its members, far from other sets' tags.
  uint64_t start = 1469598103934665603ull;
  for (int p : processes) start = (start ^ static_cast<uint64_t>(p)) * 1099511628211ull;
  const uint64_t bound = transport() ? static_cast<uint64_t>(transport()->max_tag()) + 1 : 1;
  return static_cast<int>((start + n) % bound);
}

DeviceThreads &Runtime::device_threads() const {
  std::call_once(device_threads_once_,
                 [&] { device_threads_ = std::make_shared<DeviceThreads>(device_count()); });
  return *device_threads_;
}

}  // namespace spmd
