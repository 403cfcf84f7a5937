// Reductions of one device's block over a set of its dimensions (jnp.sum,
// max, min over axes), arg-reductions over one dimension (jnp.argmax,
// jnp.argmin) and the running sum along one dimension (jnp.cumsum).
// Sums of f16, bf16 and f32 accumulate in f32, of f64 in f64, of integers
// and bool in int64 (wrapped to the result's width), as XLA on CPU.
#pragma once

#include <cstdint>
#include <vector>

#include "base/shape.hpp"
#include "spmd/dtype.h"

namespace spmd::red {

enum class Op : uint8_t { Sum, Max, Min, ArgMax, ArgMin, CumSum };

// ArgMax and ArgMin: int32 indices along one dimension.
inline bool is_arg(Op op) { return op == Op::ArgMax || op == Op::ArgMin; }

struct Params {
  Op op = Op::Sum;
  spmd_dtype in = SPMD_F32;
  spmd_dtype out = SPMD_F32;  // Sum: sum_result(in); Max, Min: in; ArgMax, ArgMin: i32;
                              // CumSum: in (bool: i32)
  Shape shape;                // the input block
  std::vector<bool> reduced;  // per dimension (ArgMax, ArgMin, CumSum: exactly one)
};

const char *op_name(Op op);
// The result's elements: the kept dimensions', or all of them for CumSum
// (a scan keeps its axis).
int64_t out_elements(const Params &p);

// Writes the block of the kept dimensions (dense, row-major). Max and Min
// of nothing give the lowest / highest value of the type.
void run(const Params &p, void *out, const void *in);

// jax.nn.softmax (or log_softmax) along rows of `cols` contiguous float32
// or float64 elements, in one pass over each row where the ops take five:
// the same max and sum as run's over the row, the same exp and log as the
// elementwise kernels', the same IEEE subtraction and division, so the
// same bits as the ops one after another.
struct SoftmaxParams {
  spmd_dtype dtype = SPMD_F32;  // of the input and the result
  int64_t rows = 0, cols = 0;   // cols >= 1
  bool log = false;
};
void softmax_rows(const SoftmaxParams &p, void *out, const void *in);

}  // namespace spmd::red
