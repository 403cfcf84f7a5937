#include "backend/host/reduce.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "kernels/flush_subnormals.hpp"

#if defined(__x86_64__)  // float arithmetic in SSE registers, governed by MXCSR
#include <xmmintrin.h>
#define SPMD_FLUSH_IN_HARDWARE 1
#endif

namespace spmd::host {

namespace {

// Elements per block: sources and the accumulator stay in L1/L2 while all
// n sources are folded in.
constexpr size_t kBlock = 2048;

// XLA's CPU code runs with subnormals flushed (x86's DAZ and FTZ): a
// subnormal operand counts as a zero of its sign, and so does a result that
// would be subnormal. Sums of flushed operands are exact below the smallest
// normal, so flushing the rounded sum is what the hardware does.
#ifdef SPMD_FLUSH_IN_HARDWARE
// On x86 sums run as XLA's do, with the FTZ and DAZ bits of MXCSR set: the
// hardware flushes every operand and result, at no cost. The bits are the
// calling thread's, restored on the way out (kernels/flush_subnormals.hpp).
constexpr bool kHardwareFlush = true;
#else
constexpr bool kHardwareFlush = false;
#endif

// The same in software (for max and min, whose selections the hardware
// does not flush, and for sums elsewhere): written on the bits (all but the
// sign cleared below the smallest normal), which vectorises into four
// integer operations.
template <typename T>
inline T flush(T x) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr U kSign = U(1) << (sizeof(T) * 8 - 1);
  constexpr U kMinNormal = sizeof(T) == 4 ? U(0x00800000u) : U(0x0010000000000000ull);
  U b;
  std::memcpy(&b, &x, sizeof b);
  b &= (b & ~kSign) < kMinNormal ? kSign : ~U(0);
  std::memcpy(&x, &b, sizeof b);
  return x;
}

// Max and min as XLA's CPU collectives compare (std::max, std::min): on a
// tie (+0 and -0) the accumulated value stays. A NaN wins, the earliest one.
template <typename T>
inline T max_keep(T acc, T x) {
  if (acc != acc) return acc;
  if (x != x) return x;
  return acc < x ? x : acc;
}
template <typename T>
inline T min_keep(T acc, T x) {
  if (acc != acc) return acc;
  if (x != x) return x;
  return x < acc ? x : acc;
}

// v = a + b for f16 values a and b, rounded to the nearest f16 (ties to
// even) and kept as a float: Eigen::half's float -> half -> float, which
// XLA's f16 sums do after every addition. Below the smallest normal f16 such
// a sum is exact (a multiple of 2^-24); from 65520 up it overflows to inf.
inline float round_to_f16(float v) {
  uint32_t x;
  std::memcpy(&x, &v, 4);
  const uint32_t abs = x & 0x7fffffffu;
  const uint32_t rounded = (x + 0xfffu + ((x >> 13) & 1u)) & ~0x1fffu;
  const uint32_t inf = (x & 0x80000000u) | 0x7f800000u;
  x = abs < 0x38800000u ? x : abs < 0x477ff000u ? rounded : abs <= 0x7f800000u ? inf : x;
  std::memcpy(&v, &x, 4);
  return v;
}

// Adds in the hardware's flushing mode where there is one (operands and
// results flushed by the FPU), else flushes in software.
template <typename T>
inline T add_flushed(T acc, T x) {
  if constexpr (kHardwareFlush)
    return acc + x;
  else
    return flush(acc + flush(x));
}

// f32 and f64. Sums start from +0 (0 + -0 is +0). Not inlined: the loops
// must run inside the caller's FlushSubnormals scope.
template <typename T, ReduceOp Op>
[[gnu::noinline]] void reduce_float(void *out, const void *const *srcs, size_t n, size_t count) {
  T *o = static_cast<T *>(out);
  for (size_t b = 0; b < count; b += kBlock) {
    const size_t m = count - b < kBlock ? count - b : kBlock;
    T *__restrict acc = o + b;
    const T *__restrict s0 = static_cast<const T *>(srcs[0]) + b;
    for (size_t i = 0; i < m; ++i) {
      if constexpr (Op == ReduceOp::Sum)
        acc[i] = add_flushed(T(0), s0[i]);
      else
        acc[i] = flush(s0[i]);
    }
    for (size_t r = 1; r < n; ++r) {
      const T *__restrict s = static_cast<const T *>(srcs[r]) + b;
      for (size_t i = 0; i < m; ++i) {
        if constexpr (Op == ReduceOp::Sum)
          acc[i] = add_flushed(acc[i], s[i]);
        else if constexpr (Op == ReduceOp::Max)
          acc[i] = max_keep(acc[i], flush(s[i]));
        else
          acc[i] = min_keep(acc[i], flush(s[i]));
      }
    }
  }
}

// Integers: sums wrap (done in the unsigned type, so no signed overflow).
template <typename T, ReduceOp Op>
void reduce_int(void *out, const void *const *srcs, size_t n, size_t count) {
  using U = std::make_unsigned_t<T>;
  T *o = static_cast<T *>(out);
  for (size_t b = 0; b < count; b += kBlock) {
    const size_t m = count - b < kBlock ? count - b : kBlock;
    T *__restrict acc = o + b;
    std::memcpy(acc, static_cast<const T *>(srcs[0]) + b, m * sizeof(T));
    for (size_t r = 1; r < n; ++r) {
      const T *__restrict s = static_cast<const T *>(srcs[r]) + b;
      for (size_t i = 0; i < m; ++i) {
        if constexpr (Op == ReduceOp::Sum)
          acc[i] = static_cast<T>(static_cast<U>(static_cast<U>(acc[i]) + static_cast<U>(s[i])));
        else if constexpr (Op == ReduceOp::Max)
          acc[i] = acc[i] > s[i] ? acc[i] : s[i];
        else
          acc[i] = acc[i] < s[i] ? acc[i] : s[i];
      }
    }
  }
}

// bf16 <-> f32 as base/dtype.hpp converts (round to nearest even, NaN kept
// quiet), inline so that the loops below vectorise.
inline float widen_bf16(uint16_t h) {
  const uint32_t x = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline uint16_t narrow_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// f16 -> f32 as base/dtype.hpp converts, inline and in integer operations
// (its subnormals scaled exactly by an integer conversion, not by a product
// of an f32 subnormal, which the hardware flushing would zero).
inline float widen_f16(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t rest = h & 0x7fffu;
  uint32_t bits;
  if (rest >= 0x7c00u)  // inf, NaN
    bits = sign | 0x7f800000u | ((rest & 0x3ffu) << 13);
  else if (rest >= 0x0400u)  // normal: rebias the exponent
    bits = sign | ((rest << 13) + 0x38000000u);
  else {  // subnormal or zero: rest * 2^-24, exact
    const float v = static_cast<float>(rest) * 0x1p-24f;
    std::memcpy(&bits, &v, 4);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// f16 and bf16, widened to f32 per block. bf16 reductions run in f32 (XLA
// promotes them) with f32's flushing and round once; f16 sums round to f16
// after every addition, and f16 values are never f32 subnormals.
template <ReduceOp Op, bool Bf16>
[[gnu::noinline]] void reduce_half(void *out, const void *const *srcs, size_t n, size_t count) {
  uint16_t *o = static_cast<uint16_t *>(out);
  float acc[kBlock], x[kBlock];
  auto widen = [&x](const uint16_t *s, size_t m) {
    for (size_t i = 0; i < m; ++i) x[i] = Bf16 ? widen_bf16(s[i]) : widen_f16(s[i]);
  };
  for (size_t b = 0; b < count; b += kBlock) {
    const size_t m = count - b < kBlock ? count - b : kBlock;
    widen(static_cast<const uint16_t *>(srcs[0]) + b, m);
    for (size_t i = 0; i < m; ++i) {
      if constexpr (Op == ReduceOp::Sum)
        acc[i] = Bf16 ? add_flushed(0.0f, x[i]) : 0.0f + x[i];
      else
        acc[i] = Bf16 ? flush(x[i]) : x[i];
    }
    for (size_t r = 1; r < n; ++r) {
      widen(static_cast<const uint16_t *>(srcs[r]) + b, m);
      for (size_t i = 0; i < m; ++i) {
        if constexpr (Op == ReduceOp::Sum)
          acc[i] = Bf16 ? add_flushed(acc[i], x[i]) : round_to_f16(acc[i] + x[i]);
        else if constexpr (Op == ReduceOp::Max)
          acc[i] = max_keep(acc[i], Bf16 ? flush(x[i]) : x[i]);
        else
          acc[i] = min_keep(acc[i], Bf16 ? flush(x[i]) : x[i]);
      }
    }
    for (size_t i = 0; i < m; ++i) o[b + i] = Bf16 ? narrow_bf16(acc[i]) : f32_to_f16_bits(acc[i]);
  }
}

template <ReduceOp Op>
void reduce_op(spmd_dtype dtype, void *out, const void *const *srcs, size_t n, size_t count) {
  switch (dtype) {
    case SPMD_F32: return reduce_float<float, Op>(out, srcs, n, count);
    case SPMD_F64: return reduce_float<double, Op>(out, srcs, n, count);
    case SPMD_I32: return reduce_int<int32_t, Op>(out, srcs, n, count);
    case SPMD_I64: return reduce_int<int64_t, Op>(out, srcs, n, count);
    case SPMD_U8: return reduce_int<uint8_t, Op>(out, srcs, n, count);
    case SPMD_I8: return reduce_int<int8_t, Op>(out, srcs, n, count);
    case SPMD_I16: return reduce_int<int16_t, Op>(out, srcs, n, count);
    case SPMD_U16: return reduce_int<uint16_t, Op>(out, srcs, n, count);
    case SPMD_U32: return reduce_int<uint32_t, Op>(out, srcs, n, count);
    case SPMD_F16: return reduce_half<Op, false>(out, srcs, n, count);
    case SPMD_BF16: return reduce_half<Op, true>(out, srcs, n, count);
    case SPMD_BOOL:
      // any / all on 0/1 bytes are max / min; a bool sum is never asked for
      // (psum widens bool to int32 first, as JAX does).
      if constexpr (Op == ReduceOp::Sum)
        fail(SPMD_ERR_INTERNAL, "sum of bool reached the reduction kernel");
      else
        return reduce_int<uint8_t, Op>(out, srcs, n, count);
    default:
      fail(SPMD_ERR_INTERNAL, "reduction of unknown dtype ", static_cast<int>(dtype));
  }
}

}  // namespace

void reduce_buffers(spmd_dtype dtype, ReduceOp op, void *out, const void *const *srcs, size_t n,
                    size_t count) {
  if (count == 0) return;
  switch (op) {
    case ReduceOp::Sum: {
      [[maybe_unused]] const FlushSubnormals flushing;
      return reduce_op<ReduceOp::Sum>(dtype, out, srcs, n, count);
    }
    case ReduceOp::Max: return reduce_op<ReduceOp::Max>(dtype, out, srcs, n, count);
    case ReduceOp::Min: return reduce_op<ReduceOp::Min>(dtype, out, srcs, n, count);
  }
}

}  // namespace spmd::host
