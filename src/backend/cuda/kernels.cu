// The CUDA platform's kernels: the dispatch over kernel kinds, and the
// small kinds (fill, arange, convert, scale by a reciprocal, first
// difference). Each kernel only loops; what one element gets is the body
// in kernels/device/, which the host tests hold to the CPU kernels.
#include "backend/cuda/kernels.hpp"

#include "backend/cuda/launch.hpp"
#include "base/dtype.hpp"
#include "kernels/device/small.hpp"

namespace spmd::cuda {

namespace {

namespace sm = dev::small;

__global__ void fill_kernel(sm::Fill f, unsigned char *out) {
  sm::fill(f, out, blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x,
           static_cast<int64_t>(gridDim.x) * blockDim.x);
}

__global__ void arange_kernel(spmd_dtype dtype, double start, double step, dev::rng::Where w,
                              unsigned char *out) {
  sm::arange(dtype, start, step, w, out, blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x,
             static_cast<int64_t>(gridDim.x) * blockDim.x);
}

__global__ void convert_kernel(spmd_dtype from, spmd_dtype to, const unsigned char *in,
                               unsigned char *out, int64_t count) {
  sm::convert(from, to, in, out, count, blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x,
              static_cast<int64_t>(gridDim.x) * blockDim.x);
}

__global__ void scale_kernel(sm::Scale s, const unsigned char *in, unsigned char *out,
                             int64_t count) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count; i += step)
    sm::scale_one(s, in, out, i);
}

// The first differing element of a and b (count elements of es bytes), or
// -1, into *out. One block walks the data in rounds, each thread taking
// kFirstUnroll 16-byte words (or bytes, for unaligned data) of a round; the
// first round with a difference ends the walk. One block, so no partial
// results need memory of their own; a difference stops the walk early.
constexpr int kFirstThreads = 1024;
constexpr int kFirstUnroll = 4;

__device__ int64_t first_byte_in_word(const unsigned char *a, const unsigned char *b,
                                      int64_t word) {
  const uint4 x = reinterpret_cast<const uint4 *>(a)[word];
  const uint4 y = reinterpret_cast<const uint4 *>(b)[word];
  const uint32_t xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
  for (int q = 0; q < 4; ++q) {
    const uint32_t d = xs[q] ^ ys[q];
    if (d != 0) return word * 16 + q * 4 + (__ffs(static_cast<int>(d)) - 1) / 8;  // little-endian
  }
  return -1;
}

__global__ void first_difference_kernel(const unsigned char *a, const unsigned char *b, int es,
                                        int64_t count, bool words, int64_t *out) {
  __shared__ int64_t lowest[kFirstThreads / 32];
  const int64_t bytes = count * es;
  const int64_t nwords = words ? bytes / 16 : 0;
  const int64_t units = nwords + (bytes - nwords * 16);  // words, then the tail's bytes
  const int64_t per_round = static_cast<int64_t>(kFirstThreads) * kFirstUnroll;
  const int t = threadIdx.x;
  for (int64_t base = 0; base < units; base += per_round) {
    int64_t mine = INT64_MAX;  // the first differing byte this thread saw
    for (int u = 0; u < kFirstUnroll; ++u) {
      const int64_t unit = base + static_cast<int64_t>(u) * kFirstThreads + t;
      if (unit >= units) break;
      int64_t at = -1;
      if (unit < nwords) {
        at = first_byte_in_word(a, b, unit);
      } else {
        const int64_t byte = nwords * 16 + (unit - nwords);
        if (a[byte] != b[byte]) at = byte;
      }
      if (at >= 0 && at < mine) mine = at;
    }
    if (!__syncthreads_or(mine != INT64_MAX)) continue;
    for (int off = 16; off > 0; off /= 2) {
      const int64_t other = __shfl_down_sync(0xffffffffu, mine, off);
      mine = other < mine ? other : mine;
    }
    if (t % 32 == 0) lowest[t / 32] = mine;
    __syncthreads();
    if (t == 0) {
      for (int w = 1; w < kFirstThreads / 32; ++w) mine = lowest[w] < mine ? lowest[w] : mine;
      *out = mine / es;
    }
    return;
  }
  if (t == 0) *out = -1;
}

void launch_fill(const Kernel &k, const KernelEnv &env) {
  const sm::Fill f = sm::make_fill(device_ptr(k.out), k.pattern, k.pattern_bytes, k.count);
  if (f.bytes == 0) return;
  const int64_t items = f.words ? f.bytes / 16 + 16 : f.bytes;
  fill_kernel<<<grid_for(items, kBlockThreads, env), kBlockThreads, 0, env.stream>>>(
      f, device_ptr(k.out));
  check_launch(env.device_label, "fill kernel");
}

void launch_arange(const Kernel &k, const KernelEnv &env) {
  if (k.global.size() > static_cast<size_t>(dev::rng::kMaxDims))
    fail(SPMD_ERR_INTERNAL, env.device_label, ": arange kernel: ", k.global.size(), " dimensions");
  const dev::rng::Where w = dev::rng::make_where(k.global, k.box);
  if (w.count <= 0) return;
  arange_kernel<<<grid_for(w.count, kBlockThreads, env), kBlockThreads, 0, env.stream>>>(
      k.dtype, k.start, k.step, w, device_ptr(k.out));
  check_launch(env.device_label, "arange kernel");
}

void launch_convert(const Kernel &k, const KernelEnv &env) {
  if (!dtype_valid(k.dtype) || !dtype_valid(k.in_dtype))
    fail(SPMD_ERR_INTERNAL, env.device_label, ": convert kernel: unknown dtype");
  if (k.count == 0) return;
  const auto n = static_cast<int64_t>(k.count);
  convert_kernel<<<grid_for(n, kBlockThreads, env), kBlockThreads, 0, env.stream>>>(
      k.in_dtype, k.dtype, device_ptr<const unsigned char>(k.in0), device_ptr(k.out), n);
  check_launch(env.device_label, "convert kernel");
}

void launch_scale(const Kernel &k, const KernelEnv &env) {
  if (k.count == 0) return;
  if (k.scalar == 1) {  // the values as they are, of any type
    if (k.in0.ptr == k.out.ptr) return;
    check_call(cudaMemcpyAsync(device_ptr(k.out), device_ptr(k.in0), k.count * dtype_size(k.dtype),
                               cudaMemcpyDefault, env.stream),
               env.device_label, "scale_by_reciprocal copy");
    return;
  }
  if (k.dtype != SPMD_F32 && k.dtype != SPMD_F64 && k.dtype != SPMD_F16 && k.dtype != SPMD_BF16)
    fail(SPMD_ERR_INTERNAL, env.device_label, ": scale_by_reciprocal kernel: ",
         dtype_name(k.dtype) ? dtype_name(k.dtype) : "unknown dtype", " is not a float type");
  const sm::Scale s = sm::make_scale(k.dtype, k.scalar);
  const auto n = static_cast<int64_t>(k.count);
  scale_kernel<<<grid_for(n, kBlockThreads, env), kBlockThreads, 0, env.stream>>>(
      s, device_ptr<const unsigned char>(k.in0), device_ptr(k.out), n);
  check_launch(env.device_label, "scale_by_reciprocal kernel");
}

void launch_first_difference(const Kernel &k, const KernelEnv &env) {
  const auto *a = device_ptr<const unsigned char>(k.in0);
  const auto *b = device_ptr<const unsigned char>(k.in1);
  const bool words = reinterpret_cast<uintptr_t>(a) % 16 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
  first_difference_kernel<<<1, kFirstThreads, 0, env.stream>>>(
      a, b, static_cast<int>(dtype_size(k.dtype)), static_cast<int64_t>(k.count), words,
      device_ptr<int64_t>(k.out));
  check_launch(env.device_label, "first_difference kernel");
}

}  // namespace

void launch_kernel(const Kernel &k, const KernelEnv &env) {
  switch (k.kind) {
    case KernelKind::Fill: return launch_fill(k, env);
    case KernelKind::Arange: return launch_arange(k, env);
    case KernelKind::Random: return launch_random(k, env);
    case KernelKind::Convert: return launch_convert(k, env);
    case KernelKind::ScaleByReciprocal: return launch_scale(k, env);
    case KernelKind::FirstDifference: return launch_first_difference(k, env);
    case KernelKind::Elementwise: return launch_elementwise(k, env);
    case KernelKind::Reduce: return launch_reduce(k, env);
    case KernelKind::Gemm: return launch_gemm(k, env);
    case KernelKind::Take: return launch_take(k, env);
    case KernelKind::ScatterAdd: return launch_scatter_add(k, env);
    case KernelKind::ElementwiseChain: return launch_elementwise_chain(k, env);
    case KernelKind::SoftmaxRows: break;  // not fused here (Backend::fused_softmax)
  }
  fail(SPMD_ERR_INTERNAL, env.device_label, ": unknown kernel kind ", static_cast<int>(k.kind));
}

}  // namespace spmd::cuda
