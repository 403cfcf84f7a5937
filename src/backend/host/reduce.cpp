#include "backend/host/reduce.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "base/dtype.hpp"
#include "base/error.hpp"

namespace spmd::host {

namespace {

// Elements per block: sources and the accumulator stay in L1/L2 while all
// n sources are folded in.
constexpr size_t kBlock = 2048;

template <typename T>
inline T fmax_nan(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}
template <typename T>
inline T fmin_nan(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? a : b;
}

template <typename T, ReduceOp Op>
inline void combine_float(T *__restrict acc, const T *__restrict src, size_t m) {
  for (size_t i = 0; i < m; ++i) {
    if constexpr (Op == ReduceOp::Sum)
      acc[i] += src[i];
    else if constexpr (Op == ReduceOp::Max)
      acc[i] = fmax_nan(acc[i], src[i]);
    else
      acc[i] = fmin_nan(acc[i], src[i]);
  }
}

// Integers: sums wrap (done in the unsigned type, so no signed overflow).
template <typename T, ReduceOp Op>
inline void combine_int(T *__restrict acc, const T *__restrict src, size_t m) {
  using U = std::make_unsigned_t<T>;
  for (size_t i = 0; i < m; ++i) {
    if constexpr (Op == ReduceOp::Sum)
      acc[i] = static_cast<T>(static_cast<U>(static_cast<U>(acc[i]) + static_cast<U>(src[i])));
    else if constexpr (Op == ReduceOp::Max)
      acc[i] = acc[i] > src[i] ? acc[i] : src[i];
    else
      acc[i] = acc[i] < src[i] ? acc[i] : src[i];
  }
}

template <typename T, ReduceOp Op>
void reduce_same(void *out, const void *const *srcs, size_t n, size_t count) {
  T *o = static_cast<T *>(out);
  for (size_t b = 0; b < count; b += kBlock) {
    const size_t m = count - b < kBlock ? count - b : kBlock;
    std::memcpy(o + b, static_cast<const T *>(srcs[0]) + b, m * sizeof(T));
    for (size_t r = 1; r < n; ++r) {
      const T *s = static_cast<const T *>(srcs[r]) + b;
      if constexpr (std::is_floating_point_v<T>)
        combine_float<T, Op>(o + b, s, m);
      else
        combine_int<T, Op>(o + b, s, m);
    }
  }
}

// f16 / bf16: widen each block to f32, fold, round once.
template <ReduceOp Op, bool Bf16>
void reduce_half(void *out, const void *const *srcs, size_t n, size_t count) {
  uint16_t *o = static_cast<uint16_t *>(out);
  float acc[kBlock];
  float tmp[kBlock];
  for (size_t b = 0; b < count; b += kBlock) {
    const size_t m = count - b < kBlock ? count - b : kBlock;
    const uint16_t *s0 = static_cast<const uint16_t *>(srcs[0]) + b;
    for (size_t i = 0; i < m; ++i) acc[i] = Bf16 ? bf16_bits_to_f32(s0[i]) : f16_bits_to_f32(s0[i]);
    for (size_t r = 1; r < n; ++r) {
      const uint16_t *s = static_cast<const uint16_t *>(srcs[r]) + b;
      for (size_t i = 0; i < m; ++i) tmp[i] = Bf16 ? bf16_bits_to_f32(s[i]) : f16_bits_to_f32(s[i]);
      combine_float<float, Op>(acc, tmp, m);
    }
    for (size_t i = 0; i < m; ++i) o[b + i] = Bf16 ? f32_to_bf16_bits(acc[i]) : f32_to_f16_bits(acc[i]);
  }
}

template <ReduceOp Op>
void reduce_op(spmd_dtype dtype, void *out, const void *const *srcs, size_t n, size_t count) {
  switch (dtype) {
    case SPMD_F32: return reduce_same<float, Op>(out, srcs, n, count);
    case SPMD_F64: return reduce_same<double, Op>(out, srcs, n, count);
    case SPMD_I32: return reduce_same<int32_t, Op>(out, srcs, n, count);
    case SPMD_I64: return reduce_same<int64_t, Op>(out, srcs, n, count);
    case SPMD_U8: return reduce_same<uint8_t, Op>(out, srcs, n, count);
    case SPMD_F16: return reduce_half<Op, false>(out, srcs, n, count);
    case SPMD_BF16: return reduce_half<Op, true>(out, srcs, n, count);
    case SPMD_BOOL:
      // any / all on 0/1 bytes are max / min; a bool sum is never asked for
      // (psum widens bool to int32 first, as JAX does).
      if constexpr (Op == ReduceOp::Sum)
        fail(SPMD_ERR_INTERNAL, "sum of bool reached the reduction kernel");
      else
        return reduce_same<uint8_t, Op>(out, srcs, n, count);
    default:
      fail(SPMD_ERR_INTERNAL, "reduction of unknown dtype ", static_cast<int>(dtype));
  }
}

}  // namespace

void reduce_buffers(spmd_dtype dtype, ReduceOp op, void *out, const void *const *srcs, size_t n,
                    size_t count) {
  if (count == 0) return;
  switch (op) {
    case ReduceOp::Sum: return reduce_op<ReduceOp::Sum>(dtype, out, srcs, n, count);
    case ReduceOp::Max: return reduce_op<ReduceOp::Max>(dtype, out, srcs, n, count);
    case ReduceOp::Min: return reduce_op<ReduceOp::Min>(dtype, out, srcs, n, count);
  }
}

}  // namespace spmd::host
