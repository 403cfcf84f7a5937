// The reduction kernel (kernels/reduce_axes.hpp) on the GPU: a team of
// threads per output element, as kernels/device/reduce.hpp lays it out;
// each lane folds its share of the reduced elements, then the team
// combines its lanes pairwise in shared memory. Nothing but the output is
// written, so an output has one block at most; except that few outputs of
// many elements each are cut into parts (red::Teams), a block per part
// writing a partial to the logical device's scratch and a second kernel
// combining each output's partials pairwise. The running sum (cumsum) is
// one thread per line, in XLA's order of additions (kernels/device/scan.hpp).
#include "backend/cuda/launch.hpp"
#include "base/dtype.hpp"
#include "kernels/device/reduce.hpp"
#include "kernels/device/scan.hpp"

namespace spmd::cuda {

namespace {

namespace red = dev::red;

static_assert(red::kMaxPartials * sizeof(red::Best<double>) <= kKernelScratchBytes,
              "the partials of a reduction cut into parts outgrow the kernels' scratch");

template <typename K, typename A, int In>
__global__ void __launch_bounds__(red::kThreads)
    reduce_kernel(red::Plan p, unsigned char *out, const unsigned char *in, int lanes,
                  bool outputs_fastest) {
  using Acc = typename K::Acc;
  __shared__ alignas(16) unsigned char raw[red::kThreads * sizeof(Acc)];
  Acc *part = reinterpret_cast<Acc *>(raw);
  const int t = threadIdx.x;
  const int group = red::kThreads / lanes;  // outputs per block
  const int g = outputs_fastest ? t % group : t / lanes;
  const int lane = outputs_fastest ? t / group : t % lanes;
  const auto slot = [&](int l) { return outputs_fastest ? l * group + g : g * lanes + l; };
  const int os = dev::dtype_bytes(p.out);
  for (int64_t first = blockIdx.x * static_cast<int64_t>(group); first < p.outputs;
       first += static_cast<int64_t>(gridDim.x) * group) {
    const int64_t o = first + g;
    part[t] = o < p.outputs ? red::lane_partial<K, A, In>(p, in, o, lane, lanes, 0, p.reduced) : K::identity(p);
    __syncthreads();
    for (int s = lanes / 2; s >= 1; s /= 2) {
      if (lane < s) part[slot(lane)] = K::combine(p, part[slot(lane)], part[slot(lane + s)]);
      __syncthreads();
    }
    if (lane == 0 && o < p.outputs) K::put(p, part[t], out + o * os);
    __syncthreads();
  }
}

// Block b takes (output, part) items b, b + gridDim.x, ...: all kThreads
// threads are lanes of the item's part.
template <typename K, typename A, int In>
__global__ void __launch_bounds__(red::kThreads)
    reduce_parts_kernel(red::Plan p, typename K::Acc *partials, const unsigned char *in, int parts,
                        int64_t part_len) {
  using Acc = typename K::Acc;
  __shared__ alignas(16) unsigned char raw[red::kThreads * sizeof(Acc)];
  Acc *part = reinterpret_cast<Acc *>(raw);
  const int t = threadIdx.x;
  const int64_t items = p.outputs * parts;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t o = item / parts, q = item - o * parts;
    const int64_t begin = q * part_len;
    const int64_t end = begin + part_len < p.reduced ? begin + part_len : p.reduced;
    part[t] = red::lane_partial<K, A, In>(p, in, o, t, red::kThreads, begin, end);
    __syncthreads();
    for (int s = red::kThreads / 2; s >= 1; s /= 2) {
      if (t < s) part[t] = K::combine(p, part[t], part[t + s]);
      __syncthreads();
    }
    if (t == 0) partials[item] = part[0];
    __syncthreads();
  }
}

// Block b combines output b's partials (and b + gridDim.x's, ...)
// pairwise, part q with part q + s as red::reduce_output does; blockDim.x
// is red::parts_span(parts).
template <typename K>
__global__ void __launch_bounds__(red::kMaxParts)
    finish_parts_kernel(red::Plan p, const typename K::Acc *partials, unsigned char *out, int parts) {
  using Acc = typename K::Acc;
  __shared__ alignas(16) unsigned char raw[red::kMaxParts * sizeof(Acc)];
  Acc *part = reinterpret_cast<Acc *>(raw);
  const int t = threadIdx.x;
  const int os = dev::dtype_bytes(p.out);
  for (int64_t o = blockIdx.x; o < p.outputs; o += gridDim.x) {
    if (t < parts) part[t] = partials[o * parts + t];
    __syncthreads();
    for (int s = static_cast<int>(blockDim.x) / 2; s >= 1; s /= 2) {
      if (t < s && t + s < parts) part[t] = K::combine(p, part[t], part[t + s]);
      __syncthreads();
    }
    if (t == 0) K::put(p, part[0], out + o * os);
    __syncthreads();
  }
}

template <typename K, typename A, int In>
void launch_parts(const red::Plan &p, const red::Teams &teams, unsigned char *out,
                  const unsigned char *in, const KernelEnv &env) {
  using Acc = typename K::Acc;
  const int64_t items = p.outputs * teams.parts;
  if (env.scratch == nullptr || static_cast<size_t>(items) * sizeof(Acc) > env.scratch_bytes)
    fail(SPMD_ERR_INTERNAL, env.device_label, ": reduce kernel: ", items,
         " partials do not fit the device's scratch of ", env.scratch_bytes, " bytes");
  auto *partials = static_cast<Acc *>(env.scratch);
  reduce_parts_kernel<K, A, In><<<grid_for(items, 1, env), red::kThreads, 0, env.stream>>>(
      p, partials, in, teams.parts, teams.part_len);
  finish_parts_kernel<K><<<grid_for(p.outputs, 1, env), red::parts_span(teams.parts), 0, env.stream>>>(
      p, partials, out, teams.parts);
}

// Thread l scans line l (consecutive threads on consecutive lines, which
// sit next to each other in memory when the scanned dimension is not the
// innermost).
template <typename A, int In>
__global__ void cumsum_kernel(spmd_dtype in_dt, spmd_dtype out_dt, dev::scan::Lines l,
                              const unsigned char *in, unsigned char *out) {
  const int64_t lines = l.outer * l.inner;
  for (int64_t line = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; line < lines;
       line += int64_t(gridDim.x) * blockDim.x)
    dev::scan::cumsum_line<A, In>(in_dt, out_dt, l, line, in, out);
}

// The kernels for input dtype In (folding in A).
template <typename A, int In>
void launch_typed(const red::Plan &p, const red::Teams &teams, const dev::scan::Lines &l,
                  unsigned char *out, const unsigned char *in, const KernelEnv &env) {
  if (p.op == red::Op::CumSum) {
    cumsum_kernel<A, In><<<grid_for(l.count(), kBlockThreads, env), kBlockThreads, 0, env.stream>>>(
        p.in, p.out, l, in, out);
    return;
  }
  if (teams.parts > 1) {
    switch (p.op) {
      case red::Op::Sum: return launch_parts<red::Sum<A>, A, In>(p, teams, out, in, env);
      case red::Op::Max:
      case red::Op::Min: return launch_parts<red::Extreme<A>, A, In>(p, teams, out, in, env);
      case red::Op::ArgMax: return launch_parts<red::ArgMax<A>, A, In>(p, teams, out, in, env);
      case red::Op::ArgMin: return launch_parts<red::ArgMin<A>, A, In>(p, teams, out, in, env);
      case red::Op::CumSum: return;  // above
    }
  }
  const unsigned grid = grid_for(p.outputs, red::kThreads / teams.lanes, env);
  const auto go = [&](auto kernel) {
    kernel<<<grid, red::kThreads, 0, env.stream>>>(p, out, in, teams.lanes, teams.outputs_fastest);
  };
  switch (p.op) {
    case red::Op::Sum: go(reduce_kernel<red::Sum<A>, A, In>); break;
    case red::Op::Max:
    case red::Op::Min: go(reduce_kernel<red::Extreme<A>, A, In>); break;
    case red::Op::ArgMax: go(reduce_kernel<red::ArgMax<A>, A, In>); break;
    case red::Op::ArgMin: go(reduce_kernel<red::ArgMin<A>, A, In>); break;
    case red::Op::CumSum: break;  // above
  }
}

// A, the accumulator, follows from the input's dtype (red::acc_type).
void launch_for_input(const red::Plan &p, const red::Teams &teams, const dev::scan::Lines &l,
                      unsigned char *out, const unsigned char *in, const KernelEnv &env) {
  switch (p.in) {
    case SPMD_F32: return launch_typed<float, SPMD_F32>(p, teams, l, out, in, env);
    case SPMD_F16: return launch_typed<float, SPMD_F16>(p, teams, l, out, in, env);
    case SPMD_BF16: return launch_typed<float, SPMD_BF16>(p, teams, l, out, in, env);
    case SPMD_F64: return launch_typed<double, SPMD_F64>(p, teams, l, out, in, env);
    case SPMD_I32: return launch_typed<int64_t, SPMD_I32>(p, teams, l, out, in, env);
    case SPMD_I64: return launch_typed<int64_t, SPMD_I64>(p, teams, l, out, in, env);
    case SPMD_U8: return launch_typed<int64_t, SPMD_U8>(p, teams, l, out, in, env);
    case SPMD_BOOL: return launch_typed<int64_t, SPMD_BOOL>(p, teams, l, out, in, env);
    case SPMD_I8: return launch_typed<int64_t, SPMD_I8>(p, teams, l, out, in, env);
    case SPMD_I16: return launch_typed<int64_t, SPMD_I16>(p, teams, l, out, in, env);
    case SPMD_U16: return launch_typed<int64_t, SPMD_U16>(p, teams, l, out, in, env);
    case SPMD_U32: return launch_typed<int64_t, SPMD_U32>(p, teams, l, out, in, env);
    case SPMD_DTYPE_INVALID: break;
  }
  fail(SPMD_ERR_INTERNAL, env.device_label, ": reduce kernel of ", dtype_name(p.in));
}

}  // namespace

void launch_reduce(const Kernel &k, const KernelEnv &env) {
  const spmd::red::Params &params = k.reduce;
  if (params.shape.size() > static_cast<size_t>(red::kMaxDims) ||
      params.reduced.size() != params.shape.size())
    fail(SPMD_ERR_INTERNAL, env.device_label, ": reduce kernel: ", params.shape.size(),
         " dimensions");
  const red::Plan p = red::make_plan(params);
  if (p.outputs == 0) return;
  const red::Teams teams = red::teams(p);
  unsigned char *out = device_ptr(k.out);
  const auto *in = device_ptr<const unsigned char>(k.in0);
  launch_for_input(p, teams, dev::scan::lines_of(params), out, in, env);
  check_launch(env.device_label, "reduce kernel");
}

}  // namespace spmd::cuda
