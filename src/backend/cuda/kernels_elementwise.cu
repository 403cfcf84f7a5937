// The elementwise kernel (kernels/elementwise.hpp) on the GPU: one thread
// per element in a grid-stride loop, each element the body of
// kernels/device/elementwise.hpp; neighbouring threads take neighbouring
// elements of the result, so every access is coalesced. Where the result
// and the operands are contiguous and of the computing type itself (f32
// arithmetic, f64 functions, int64 sums), a thread takes a 16-byte word of
// each; anything else finds each operand's element from its strides
// (divisions only for broadcast or transposed operands).
#include "backend/cuda/launch.hpp"
#include "base/dtype.hpp"
#include "kernels/device/elementwise.hpp"
#include "kernels/device/elementwise_chain.hpp"

namespace spmd::cuda {

namespace {

namespace ew = dev::ew;

template <typename T>
__global__ void elementwise_kernel(ew::Plan p, unsigned char *out, const unsigned char *a,
                                   const unsigned char *b, const unsigned char *c, bool words) {
  const unsigned char *const in[3] = {a, b, c};
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  if (words) ew::run_words<T>(p, out, in, first, step);
  else ew::run_strided<T>(p, out, in, first, step);
}

// A program's fused pass: each thread runs the whole chain for its
// elements, the intermediate values in its own slots.
__global__ void chain_kernel(ew::ChainPlan c, unsigned char *out, const unsigned char *a,
                             const unsigned char *b, const unsigned char *d) {
  const unsigned char *const in[3] = {a, b, d};
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  ew::run_chain(c, out, in, first, static_cast<int64_t>(gridDim.x) * blockDim.x);
}

}  // namespace

void launch_elementwise(const Kernel &k, const KernelEnv &env) {
  const spmd::ew::Params &params = k.elementwise;
  // What kernels/elementwise.cpp refuses, refused the same way.
  for (int64_t s : params.shape)
    if (s == 0) return;
  if (params.shape.size() > static_cast<size_t>(ew::kMaxDims))
    fail(SPMD_ERR_INTERNAL, env.device_label, ": elementwise kernel: too many dimensions");
  if (!ew::takes(params.op, params.compute))
    fail(SPMD_ERR_INTERNAL, env.device_label, ": elementwise kernel: op ",
         static_cast<int>(params.op), " on integers");
  for (int i = 0; i < params.nin; ++i)
    if (!dtype_valid(params.in[i].dtype))
      fail(SPMD_ERR_INTERNAL, env.device_label, ": elementwise kernel: operand dtype ",
           static_cast<int>(params.in[i].dtype));
  const ew::Plan p = ew::make_plan(params);
  unsigned char *out = device_ptr(k.out);
  const Place places[3] = {k.in0, k.in1, k.in2};
  const unsigned char *in[3] = {nullptr, nullptr, nullptr};
  for (int i = 0; i < params.nin; ++i)
    if (!params.in[i].scalar) in[i] = device_ptr<const unsigned char>(places[i]);
  const bool words = ew::wordable(p, out, in);
  const int64_t items = words ? p.count / 2 : p.count;
  const unsigned grid = grid_for(items, kBlockThreads, env);
  switch (params.compute) {  // as the CPU kernel: f32, f64, everything else in int64
    case SPMD_F32:
      elementwise_kernel<float><<<grid, kBlockThreads, 0, env.stream>>>(p, out, in[0], in[1], in[2], words);
      break;
    case SPMD_F64:
      elementwise_kernel<double><<<grid, kBlockThreads, 0, env.stream>>>(p, out, in[0], in[1], in[2], words);
      break;
    default:
      elementwise_kernel<int64_t><<<grid, kBlockThreads, 0, env.stream>>>(p, out, in[0], in[1], in[2], words);
      break;
  }
  check_launch(env.device_label, "elementwise kernel");
}

void launch_elementwise_chain(const Kernel &k, const KernelEnv &env) {
  const spmd::ew::Chain &chain = *k.chain;
  if (chain.steps.empty() || chain.steps.size() > static_cast<size_t>(ew::kMaxChainSteps))
    fail(SPMD_ERR_INTERNAL, env.device_label, ": elementwise chain of ", chain.steps.size(),
         " steps (1 to ", ew::kMaxChainSteps, " run on a GPU)");
  if (k.count == 0) return;
  for (const auto &s : chain.steps)
    if (!ew::takes(s.params.op, s.params.compute))
      fail(SPMD_ERR_INTERNAL, env.device_label, ": elementwise chain: op ",
           static_cast<int>(s.params.op), " on integers");
  const ew::ChainPlan c = ew::make_chain_plan(chain, static_cast<int64_t>(k.count));
  const Place places[3] = {k.in0, k.in1, k.in2};
  const unsigned char *in[3] = {nullptr, nullptr, nullptr};
  for (int i = 0; i < chain.nin; ++i) in[i] = device_ptr<const unsigned char>(places[i]);
  const unsigned grid = grid_for(static_cast<int64_t>(k.count), kBlockThreads, env);
  chain_kernel<<<grid, kBlockThreads, 0, env.stream>>>(c, device_ptr(k.out), in[0], in[1], in[2]);
  check_launch(env.device_label, "elementwise chain kernel");
}

}  // namespace spmd::cuda
