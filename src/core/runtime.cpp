#include "core/runtime.hpp"

#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "core/raw_enum.hpp"
#include "exec/device_threads.hpp"

namespace spmd {

namespace {
constexpr int kDefaultCpuDevices = 8;
constexpr int kMaxCpuDevices = 4096;

int cpu_devices_from(const spmd_runtime_options &o) {
  if (o.cpu_device_count > 0) return o.cpu_device_count;
  const char *env = std::getenv("SPMD_CPU_DEVICES");
  if (env == nullptr || *env == '\0') return kDefaultCpuDevices;
  char *end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n < 1 || n > kMaxCpuDevices)
    invalid("SPMD_CPU_DEVICES='", env, "': expected a device count from 1 to ",
            kMaxCpuDevices);
  return static_cast<int>(n);
}

spmd_platform platform_from(const spmd_runtime_options &o) {
  const int given = raw_enum(o.platform);
  if (given != SPMD_PLATFORM_DEFAULT) {
    if (given != SPMD_PLATFORM_CPU && given != SPMD_PLATFORM_CUDA)
      invalid("options->platform: ", given, " is not a known platform");
    return static_cast<spmd_platform>(given);
  }
  const char *env = std::getenv("SPMD_PLATFORM");
  if (env == nullptr || *env == '\0' || std::strcmp(env, "cpu") == 0)
    return SPMD_PLATFORM_CPU;
  if (std::strcmp(env, "cuda") == 0) return SPMD_PLATFORM_CUDA;
  invalid("SPMD_PLATFORM='", env, "': expected 'cpu' or 'cuda'");
}
}  // namespace

Runtime::Runtime(std::shared_ptr<Backend> backend, int worker_threads)
    : backend_(std::move(backend)), pool_(std::make_unique<WorkerPool>(worker_threads)) {}

std::shared_ptr<Runtime> Runtime::create(const spmd_runtime_options &o) {
  if (o.cpu_device_count < 0 || o.cpu_device_count > kMaxCpuDevices)
    invalid("options->cpu_device_count: ", o.cpu_device_count,
            " is not a device count from 1 to ", kMaxCpuDevices, " (or 0 for the default)");
  if (o.worker_threads < 0)
    invalid("options->worker_threads: ", o.worker_threads, " is negative");
  switch (platform_from(o)) {
    case SPMD_PLATFORM_CPU:
      return std::make_shared<Runtime>(make_cpu_backend(cpu_devices_from(o)), o.worker_threads);
    case SPMD_PLATFORM_CUDA:
      return std::make_shared<Runtime>(make_cuda_backend(), o.worker_threads);
    default:
      invalid("options->platform: ", raw_enum(o.platform), " is not a known platform");
  }
}

void Runtime::check_device(const char *what, int device) const {
  if (device < 0 || device >= device_count())
    fail(SPMD_ERR_OUT_OF_RANGE, what, ": device ", device, " does not exist (the runtime has ",
         device_count(), " devices, 0 to ", device_count() - 1, ")");
}

DeviceThreads &Runtime::device_threads() const {
  std::call_once(device_threads_once_,
                 [&] { device_threads_ = std::make_shared<DeviceThreads>(device_count()); });
  return *device_threads_;
}

}  // namespace spmd
