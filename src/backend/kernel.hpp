// The one kernel entry point's descriptor: what to compute, on which
// device, over which memory. Every per-element operation a backend runs
// for the layers above (filling arrays, drawing random numbers, converting
// dtypes, scaling, comparing) is a kind here, so a new op adds a kind and
// its implementations, not a new virtual function on every backend.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/memory.hpp"
#include "base/shape.hpp"
#include <memory>

#include "kernels/elementwise.hpp"
#include "kernels/elementwise_chain.hpp"
#include "kernels/gemm.hpp"
#include "kernels/random.hpp"
#include "kernels/reduce_axes.hpp"
#include "kernels/scatter_add.hpp"
#include "kernels/take.hpp"
#include "spmd/dtype.h"

namespace spmd {

enum class KernelKind {
  // out[i] = pattern (one element of `dtype`, pattern_bytes long), count elements.
  Fill,
  // out = start + k * step converted to dtype, k the row-major index in
  // `global` of each element of `box` (the shard's block, row-major).
  Arange,
  // out = the elements of `box` of a global array of shape `global` drawn
  // as `random` says (kernels/random.hpp).
  Random,
  // out[i] = in0[i] converted from `in_dtype` to `dtype` (as jnp.astype), count elements.
  Convert,
  // out[i] = in0[i] * (1 / scalar) in `dtype` (floating types), count
  // elements: a division by the count `scalar` as XLA's CPU code computes
  // it, a multiplication by the reciprocal rounded as XLA rounds it;
  // out and in0 may be the same memory.
  ScaleByReciprocal,
  // out (one int64 in any memory) = the first i < count at which the
  // elements of `dtype` at in0 and in1 differ bitwise, or -1.
  FirstDifference,
  // out = the elementwise op of up to three operands in0, in1, in2
  // (kernels/elementwise.hpp), each read through its strides.
  Elementwise,
  // out = a chain of elementwise passes over count elements of up to three
  // dense inputs, run as one pass (kernels/elementwise_chain.hpp), at most
  // Backend::max_chain_steps steps.
  ElementwiseChain,
  // out = in0 reduced over some of its dimensions (kernels/reduce_axes.hpp).
  Reduce,
  // out = softmax (or log_softmax) of in0 along its rows
  // (red::softmax_rows); only where Backend::fused_softmax says so.
  SoftmaxRows,
  // out = in0 times in1, batched (kernels/gemm.hpp). Uses the BLAS
  // library's own threads, so backends run these one at a time.
  Gemm,
  Take,
  // out = in0 with the updates in2 added at the indices in1 along one axis
  // (kernels/scatter_add.hpp).
  ScatterAdd,
};

// "fill", "arange", ...: the kind's name in messages and in SPMD_SIM_FAIL_KERNEL.
const char *kernel_name(KernelKind kind);

struct Kernel {
  KernelKind kind = KernelKind::Fill;
  int device = 0;          // the device that runs it
  spmd_dtype dtype = SPMD_DTYPE_INVALID;     // of out (and of in0, in1 unless said otherwise)
  spmd_dtype in_dtype = SPMD_DTYPE_INVALID;  // Convert: of in0
  Place out;
  Place in0, in1, in2;     // may be memory of other devices of the same backend
  size_t count = 0;        // elements
  double scalar = 0;       // ScaleByReciprocal: the count whose reciprocal scales
  double start = 0, step = 0;           // Arange
  unsigned char pattern[8] = {0};       // Fill
  size_t pattern_bytes = 0;
  Shape global;            // Arange, Random
  Box box;
  rng::Request random;     // Random
  ew::Params elementwise;  // Elementwise
  std::shared_ptr<const ew::Chain> chain;  // ElementwiseChain
  red::Params reduce;      // Reduce
  red::SoftmaxParams softmax;  // SoftmaxRows
  gemm::Params gemm;       // Gemm
  take::Params take;       // Take: in0 the operand, in1 the indices
  scatter_add::Params scatter;  // ScatterAdd

  // The descriptors, one maker per kind.
  static Kernel fill(Place out, spmd_dtype dtype, size_t count, const void *element);
  static Kernel arange(Place out, spmd_dtype dtype, Shape global, Box box, double start,
                       double step);
  static Kernel draw(Place out, const rng::Request &request, Shape global, Box box);
  static Kernel convert(Place out, spmd_dtype to, Place in, spmd_dtype from, size_t count);
  static Kernel scale_by_reciprocal(Place out, Place in, spmd_dtype dtype, size_t count,
                                    double divisor);
  static Kernel elementwise_op(Place out, const Place (&in)[3], ew::Params params, int device);
  static Kernel elementwise_chain(Place out, const Place (&in)[3],
                                  std::shared_ptr<const ew::Chain> chain, spmd_dtype dtype,
                                  size_t count, int device);
  static Kernel reduction(Place out, Place in, red::Params params, int device);
  static Kernel softmax_rows(Place out, Place in, red::SoftmaxParams params, int device);
  static Kernel matmul(Place out, Place a, Place b, gemm::Params params, int device);
  static Kernel take_along(Place out, Place a, Place indices, take::Params params, int device);
  static Kernel scatter_added(Place out, Place x, Place indices, Place updates,
                              scatter_add::Params params, int device);
  static Kernel first_difference(Place out, Place a, Place b, spmd_dtype dtype, size_t count,
                                 int device);
};

}  // namespace spmd
