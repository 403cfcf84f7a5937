// The CUDA plugin's one export (backend/plugin.hpp): makes the backend, or
// says why it cannot.
#include <cstdio>
#include <cstring>
#include <new>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/plugin.hpp"
#include "base/error.hpp"

namespace {

int refuse(spmd_status status, const char *text, char *message, size_t size) {
  if (message && size) std::snprintf(message, size, "%s", text);
  return status;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int spmd_plugin_create_cuda(
    const char *interface, const spmd::PluginConfig *config, spmd::Backend **out, char *message,
    size_t message_size) {
  if (interface == nullptr || std::strcmp(interface, spmd::kPluginInterface) != 0) {
    char text[512];
    std::snprintf(text, sizeof text,
                  "the CUDA plugin was built from another libspmd (its interface %s, the "
                  "library's %s): use the plugin built with this libspmd",
                  spmd::kPluginInterface, interface ? interface : "(none)");
    return refuse(SPMD_ERR_UNSUPPORTED, text, message, message_size);
  }
  if (config == nullptr || out == nullptr || config->struct_size < sizeof(spmd::PluginConfig))
    return refuse(SPMD_ERR_INTERNAL, "the CUDA plugin was called without its configuration",
                  message, message_size);
  try {
    *out = new spmd::cuda::CudaBackend(*config);
    return SPMD_OK;
  } catch (const spmd::Error &e) {
    return refuse(e.status(), e.what(), message, message_size);
  } catch (const std::bad_alloc &) {
    return refuse(SPMD_ERR_OUT_OF_MEMORY, "out of memory while starting the CUDA platform",
                  message, message_size);
  } catch (const std::exception &e) {
    return refuse(SPMD_ERR_INTERNAL, e.what(), message, message_size);
  }
}
