// The CUDA plugin's one export (base/plugin.hpp): makes the backend, or
// says why it cannot.
#include "backend/cuda/cuda_backend.hpp"
#include "backend/plugin.hpp"

extern "C" __attribute__((visibility("default"))) int spmd_plugin_create_cuda(
    const char *interface, int kind, const void *config, void **out, char *message,
    size_t message_size) {
  return spmd::serve_plugin_create<spmd::Backend, spmd::PluginConfig>(
      "the CUDA plugin", spmd::PluginKind::Platform, interface, kind, config, out, message,
      message_size,
      [](const spmd::PluginConfig &c) -> spmd::Backend * {
        return new spmd::cuda::CudaBackend(c);
      });
}
