// scatter_add (kernels/scatter_add.hpp) on the GPU: one thread per result
// element, adding its updates in update order through the body the CPU
// kernel's additions share (kernels/device/scatter_add.hpp), so no atomics
// reorder the sums.
#include "backend/cuda/launch.hpp"
#include "kernels/device/scatter_add.hpp"

namespace spmd::cuda {

namespace {

__global__ void scatter_add_kernel(spmd::scatter_add::Params p, unsigned char *out,
                                   const unsigned char *x, const unsigned char *indices,
                                   const unsigned char *updates, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total; e += step)
    dev::scatter_add::element(p, e, out, x, indices, updates);
}

}  // namespace

void launch_scatter_add(const Kernel &k, const KernelEnv &env) {
  const int64_t total = spmd::scatter_add::out_elements(k.scatter);
  if (total == 0) return;
  scatter_add_kernel<<<grid_for(total, kBlockThreads, env), kBlockThreads, 0, env.stream>>>(
      k.scatter, device_ptr(k.out), device_ptr<const unsigned char>(k.in0),
      device_ptr<const unsigned char>(k.in1), device_ptr<const unsigned char>(k.in2), total);
  check_launch(env.device_label, "scatter_add kernel");
}

}  // namespace spmd::cuda
