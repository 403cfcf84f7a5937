// The running sum's (jnp.cumsum's) per-line body, shared by the CPU kernel
// (kernels/reduce_axes.cpp) and the CUDA kernel (backend/cuda/kernels_reduce.cu).
//
// XLA on CPU adds in a fixed order that a float result must follow to be
// JAX's bit for bit: a line of at most 16 is summed in order; a longer one
// in blocks of 16, each block in order, then each block adds the running
// sum of the block totals before it, found by the same scan of the block
// totals (ReduceWindowRewriter, base length 16), recursively.
//
// LineScan gives that order one element at a time with a few values per
// level of the recursion and no buffer: the total of a block, when the
// block ends, is the next element of the level above, and the running sum
// that element gets there is what every element of the next block adds.
// So one thread scans one line on the GPU, as one loop does on the CPU.
#pragma once

#include "kernels/device/reduce.hpp"

namespace spmd::dev::scan {

constexpr int kBlock = 16;
constexpr int kMaxLevels = 16;  // 16^16 elements: more than any line

// The running sums of one line, in XLA's order. `Add` rounds as the
// result's type does (f16 and bf16 sums round at every step, as XLA's
// per-op arithmetic does).
template <typename A, typename Add>
class LineScan {
 public:
  SPMD_HD explicit LineScan(Add add) : add_(add) {
    for (int k = 0; k < kMaxLevels; ++k) {
      acc_[k] = A(0);
      carry_[k] = A(0);
      count_[k] = 0;
      has_carry_[k] = false;
    }
  }

  // The running sum up to and including x.
  SPMD_HD A next(A x) {
    A sum[kMaxLevels];
    int k = 0;
    for (;;) {
      acc_[k] = add_(acc_[k], x);
      sum[k] = has_carry_[k] ? add_(acc_[k], carry_[k]) : acc_[k];
      if (++count_[k] < kBlock || k + 1 == kMaxLevels) break;
      x = acc_[k];  // the block's total: the next element of the level above
      acc_[k] = A(0);
      count_[k] = 0;
      ++k;
    }
    // Each level whose block ended adds, from now on, the running sum its
    // total got a level up.
    for (int j = k - 1; j >= 0; --j) {
      carry_[j] = sum[j + 1];
      has_carry_[j] = true;
    }
    return sum[0];
  }

 private:
  Add add_;
  A acc_[kMaxLevels];    // the running sum within the level's current block
  A carry_[kMaxLevels];  // what the current block's elements add
  int count_[kMaxLevels];
  bool has_carry_[kMaxLevels];
};

// The GPU's addition: the CPU's (DAZ, FTZ, x86's NaNs) emulated, integers
// wrapping, f16 and bf16 rounded at every step.
template <typename A>
struct Plus {
  spmd_dtype out = SPMD_F32;
  SPMD_HD A operator()(A a, A b) const {
    if constexpr (std::is_same_v<A, int64_t>) {
      return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    } else {
      const A s = add(a, b);
      if constexpr (std::is_same_v<A, float>) {
        if (out == SPMD_F16) return f16_bits_to_f32(f32_to_f16_bits(s));
        if (out == SPMD_BF16) return bf16_bits_to_f32(f32_to_bf16_bits(s));
      }
      return s;
    }
  }
};

// A cumsum's input as lines: `outer` x `inner` lines of `len` elements,
// element r of line (a, c) at (a * len + r) * inner + c.
struct Lines {
  int64_t outer = 1, len = 1, inner = 1;
  int64_t count() const { return outer * inner; }
  // XLA makes a copy of a running sum over one element, so a subnormal
  // stays (jnp.cumsum of [1e-40] is [1e-40]; of [1e-40, 0], [0, 0]).
  SPMD_HD bool copies_one() const { return len == 1; }
};

inline Lines lines_of(const spmd::red::Params &p) {
  Lines l;
  size_t axis = 0;
  for (size_t d = 0; d < p.shape.size(); ++d)
    if (p.reduced[d]) axis = d;
  for (size_t d = 0; d < p.shape.size(); ++d) {
    if (d < axis) l.outer *= p.shape[d];
    else if (d == axis) l.len = p.shape[d];
    else l.inner *= p.shape[d];
  }
  return l;
}

// Line `line` of the cumsum from `in` (dtype `in_dt`) to `out` (`out_dt`),
// folded in A (red::acc_type's). `In`, when given, is in_dt known at
// compile time.
template <typename A, int In = -1>
SPMD_HD void cumsum_line(spmd_dtype in_dt, spmd_dtype out_dt, const Lines &l, int64_t line,
                         const unsigned char *in, unsigned char *out) {
  const spmd_dtype dt = In < 0 ? in_dt : static_cast<spmd_dtype>(In);
  const int64_t a = line / l.inner, c = line - a * l.inner;
  const int ies = dtype_bytes(dt), oes = dtype_bytes(out_dt);
  LineScan<A, Plus<A>> scan(Plus<A>{out_dt});
  for (int64_t r = 0; r < l.len; ++r) {
    const int64_t at = (a * l.len + r) * l.inner + c;
    const A x = red::load<A>(dt, in + at * ies);
    red::store<A>(out_dt, l.copies_one() ? x : scan.next(x), out + at * oes);
  }
}

}  // namespace spmd::dev::scan
