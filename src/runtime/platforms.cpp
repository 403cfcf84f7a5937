#include "runtime/platforms.hpp"

#include <cstdlib>
#include <cstring>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/sim/sim_backend.hpp"
#include "base/error.hpp"
#include "base/raw_enum.hpp"
#include "runtime/plugin_loader.hpp"

namespace spmd {

namespace {
constexpr int kDefaultCpuDevices = 8;
// Freed device memory the CPU platform keeps for reuse, by default.
constexpr int64_t kDefaultDeviceCacheBytes = int64_t{4} << 30;
constexpr int kMaxCpuDevices = 4096;
constexpr int kMaxDevicesPerGpu = 64;

// A device count from environment variable `name`, 1 to `max`, or
// `fallback` when it is unset.
int env_device_count(const char *name, int max, int fallback) {
  const char *env = std::getenv(name);
  if (env == nullptr || *env == '\0') return fallback;
  char *end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n < 1 || n > max)
    invalid(name, "='", env, "': expected a device count from 1 to ", max);
  return static_cast<int>(n);
}

int cpu_devices_from(const spmd_runtime_options &o) {
  if (o.cpu_device_count > 0) return o.cpu_device_count;
  return env_device_count("SPMD_CPU_DEVICES", kMaxCpuDevices, kDefaultCpuDevices);
}

int devices_per_gpu_from(const spmd_runtime_options &o) {
  if (o.devices_per_gpu < 0 || o.devices_per_gpu > kMaxDevicesPerGpu)
    invalid("options->devices_per_gpu: ", o.devices_per_gpu, " is not a device count from 1 to ",
            kMaxDevicesPerGpu, " (or 0 for the default)");
  if (o.devices_per_gpu > 0) return o.devices_per_gpu;
  return env_device_count("SPMD_CUDA_DEVICES_PER_GPU", kMaxDevicesPerGpu, 1);
}

// The memory callbacks receive: the option, else $SPMD_CALLBACK_MEMORY,
// else the platform's own (`fallback`). Plain host memory is the CPU
// platform's device memory, which is `fallback` there; others refuse it.
MemoryKind callback_memory_from(const spmd_runtime_options &o, MemoryKind fallback,
                                spmd_platform platform) {
  const int given = raw_enum(o.callback_memory);
  if (given == SPMD_MEMORY_DEVICE) return MemoryKind::Device;
  if (given == SPMD_MEMORY_HOST_MAPPED) return MemoryKind::Mapped;
  if (given == SPMD_MEMORY_HOST) {
    if (platform != SPMD_PLATFORM_CPU)
      invalid("options->callback_memory: SPMD_MEMORY_HOST is the cpu platform's alone (its "
              "devices' memory is host memory); other platforms give host code "
              "SPMD_MEMORY_HOST_MAPPED");
    return fallback;
  }
  if (given != SPMD_MEMORY_DEFAULT)
    invalid("options->callback_memory: ", given, " is not a spmd_memory_kind");
  const char *env = std::getenv("SPMD_CALLBACK_MEMORY");
  if (env == nullptr || *env == '\0') return fallback;
  if (std::strcmp(env, "device") == 0) return MemoryKind::Device;
  if (std::strcmp(env, "mapped") == 0) return MemoryKind::Mapped;
  invalid("SPMD_CALLBACK_MEMORY='", env, "': expected 'device' or 'mapped'");
}

spmd_platform platform_from(const spmd_runtime_options &o) {
  const int given = raw_enum(o.platform);
  if (given != SPMD_PLATFORM_DEFAULT) {
    if (given != SPMD_PLATFORM_CPU && given != SPMD_PLATFORM_CUDA && given != SPMD_PLATFORM_SIM)
      invalid("options->platform: ", given, " is not a known platform");
    return static_cast<spmd_platform>(given);
  }
  const char *env = std::getenv("SPMD_PLATFORM");
  if (env == nullptr || *env == '\0' || std::strcmp(env, "cpu") == 0)
    return SPMD_PLATFORM_CPU;
  if (std::strcmp(env, "cuda") == 0) return SPMD_PLATFORM_CUDA;
  if (std::strcmp(env, "sim") == 0) return SPMD_PLATFORM_SIM;
  invalid("SPMD_PLATFORM='", env, "': expected 'cpu', 'sim' or 'cuda'");
}
}  // namespace

std::shared_ptr<Backend> make_backend(const spmd_runtime_options &o) {
  if (o.cpu_device_count < 0 || o.cpu_device_count > kMaxCpuDevices)
    invalid("options->cpu_device_count: ", o.cpu_device_count,
            " is not a device count from 1 to ", kMaxCpuDevices, " (or 0 for the default)");
  if (o.worker_threads < 0)
    invalid("options->worker_threads: ", o.worker_threads, " is negative");
  if (o.worker_threads > SPMD_MAX_WORKER_THREADS)
    invalid("options->worker_threads: ", o.worker_threads, " is more than the ",
            SPMD_MAX_WORKER_THREADS, " threads a runtime takes (SPMD_MAX_WORKER_THREADS)");
  const int64_t cache = o.device_cache_bytes == 0 ? kDefaultDeviceCacheBytes
                        : o.device_cache_bytes < 0 ? 0
                                                   : o.device_cache_bytes;
  const int per_gpu = devices_per_gpu_from(o);
  switch (platform_from(o)) {
    case SPMD_PLATFORM_CPU:
      // Its device memory is host memory: device and mapped alike.
      callback_memory_from(o, MemoryKind::Device, SPMD_PLATFORM_CPU);
      return std::make_shared<cpu::CpuBackend>(cpu_devices_from(o), o.worker_threads,
                                               static_cast<size_t>(cache));
    case SPMD_PLATFORM_SIM:
      if (callback_memory_from(o, MemoryKind::Mapped, SPMD_PLATFORM_SIM) != MemoryKind::Mapped)
        invalid("callback memory: the sim platform gives callbacks mapped memory only (its "
                "device memory is not host memory, and callbacks run on the host)");
      return std::make_shared<sim::SimBackend>(cpu_devices_from(o));
    case SPMD_PLATFORM_CUDA: {
      PluginConfig config;
      config.devices_per_gpu = per_gpu;
      // The GPU's pools keep all freed memory unless a bound is asked.
      config.cache_bytes = o.device_cache_bytes == 0 ? -1
                           : o.device_cache_bytes < 0 ? 0
                                                      : o.device_cache_bytes;
      config.callback_memory = callback_memory_from(o, MemoryKind::Device, SPMD_PLATFORM_CUDA);
      return load_plugin_backend("cuda", config);
    }
    default:
      invalid("options->platform: ", raw_enum(o.platform), " is not a known platform");
  }
}

}  // namespace spmd
