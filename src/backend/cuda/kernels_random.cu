// The random kernel (kernels/random.hpp) on the GPU: one thread per element
// in a grid-stride loop, each element kernels/device/random.hpp's body.
// Built with -fmad=false (CMakeLists.txt): the body's roundings are
// kernels/random.cpp's only if no multiply and add are fused behind its
// back.
#include "backend/cuda/launch.hpp"
#include "base/dtype.hpp"
#include "kernels/device/random.hpp"

namespace spmd::cuda {

namespace {

namespace rng = dev::rng;

__global__ void random_kernel(rng::Draw d, rng::Where w, unsigned char *out) {
  rng::run(d, w, out, blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x,
           static_cast<int64_t>(gridDim.x) * blockDim.x);
}

}  // namespace

void launch_random(const Kernel &k, const KernelEnv &env) {
  if (!rng::supported(k.random))
    fail(SPMD_ERR_INTERNAL, env.device_label, ": random: no generator for dtype ",
         dtype_name(k.random.dtype) ? dtype_name(k.random.dtype) : "(unknown)");
  if (k.global.size() > static_cast<size_t>(rng::kMaxDims))
    fail(SPMD_ERR_INTERNAL, env.device_label, ": random kernel: ", k.global.size(), " dimensions");
  const rng::Where w = rng::make_where(k.global, k.box);
  if (w.count <= 0) return;
  random_kernel<<<grid_for(w.count, kBlockThreads, env), kBlockThreads, 0, env.stream>>>(
      rng::make_draw(k.random), w, device_ptr(k.out));
  check_launch(env.device_label, "random kernel");
}

}  // namespace spmd::cuda
