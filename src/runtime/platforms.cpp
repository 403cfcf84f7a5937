#include "runtime/platforms.hpp"

#include <cstdlib>
#include <cstring>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/sim/sim_backend.hpp"
#ifdef SPMD_HAVE_CUDA
#include "backend/cuda/cuda_backend.hpp"
#endif
#include "base/error.hpp"
#include "base/raw_enum.hpp"

namespace spmd {

namespace {
constexpr int kDefaultCpuDevices = 8;
// Freed device memory the CPU platform keeps for reuse, by default.
constexpr int64_t kDefaultDeviceCacheBytes = int64_t{4} << 30;
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
  switch (platform_from(o)) {
    case SPMD_PLATFORM_CPU:
      return std::make_shared<cpu::CpuBackend>(cpu_devices_from(o), o.worker_threads,
                                               static_cast<size_t>(cache));
    case SPMD_PLATFORM_SIM:
      return std::make_shared<sim::SimBackend>(cpu_devices_from(o));
    case SPMD_PLATFORM_CUDA:
#ifdef SPMD_HAVE_CUDA
      return std::make_shared<cuda::CudaBackend>();
#else
      fail(SPMD_ERR_UNSUPPORTED,
           "platform: the CUDA platform is not built into this libspmd "
           "(configure with -DSPMD_WITH_CUDA=ON where the CUDA Toolkit is installed)");
#endif
    default:
      invalid("options->platform: ", raw_enum(o.platform), " is not a known platform");
  }
}

}  // namespace spmd
