// Which platforms this build of libspmd carries.
#include "backend/backend.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "core/error.hpp"

namespace spmd {

std::shared_ptr<Backend> make_cpu_backend(int cpu_devices) {
  return std::make_shared<cpu::CpuBackend>(cpu_devices);
}

#ifndef SPMD_HAVE_CUDA
bool cuda_backend_available() { return false; }

std::shared_ptr<Backend> make_cuda_backend() {
  fail(SPMD_ERR_UNSUPPORTED,
       "platform: the CUDA platform is not built into this libspmd "
       "(configure with -DSPMD_WITH_CUDA=ON where the CUDA Toolkit is installed)");
}
#endif

}  // namespace spmd
