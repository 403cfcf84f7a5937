// jnp.take (kernels/take.hpp) on the GPU: one thread per result element,
// through the body the CPU kernel runs (kernels/device/take.hpp).
#include "backend/cuda/launch.hpp"
#include "kernels/device/take.hpp"

namespace spmd::cuda {

namespace {

__global__ void take_kernel(spmd::take::Params p, unsigned char *out, const unsigned char *a,
                            const unsigned char *indices, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total; e += step)
    dev::take::element(p, e, out, a, indices);
}

}  // namespace

void launch_take(const Kernel &k, const KernelEnv &env) {
  const int64_t total = spmd::take::out_elements(k.take);
  if (total == 0) return;
  take_kernel<<<grid_for(total, kBlockThreads, env), kBlockThreads, 0, env.stream>>>(
      k.take, device_ptr(k.out), device_ptr<const unsigned char>(k.in0),
      device_ptr<const unsigned char>(k.in1), total);
  check_launch(env.device_label, "take kernel");
}

}  // namespace spmd::cuda
