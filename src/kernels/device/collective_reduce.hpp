// The element bodies of the collectives' reductions, compiled for the host
// and for CUDA devices alike: one member value at a time, in member order,
// computing exactly what host::reduce_buffers computes (its header states
// the rules: sums from +0, flushed subnormals, bf16 summed in f32 and f16
// rounded after every addition, wrapping integers, the earliest value kept
// on ties, the first NaN winning max and min).
//
// Nothing here may depend on the compiler's floating-point modes, which
// differ between the host and the GPU: flushing, NaN tests and conversions
// work on the bits, and NaNs made by additions follow x86-64's SSE rules
// (the first NaN operand, quieted; inf - inf is the negative "indefinite"
// NaN), where the GPU would return its own canonical NaN.
//
// A reduction is start(first value), step(acc, next value) for each later
// member, finish(acc). Where kResumable holds, finish then resume gives
// back an accumulator that continues bit for bit, so a long list of
// members can be reduced in several passes over the output.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "base/collective_kinds.hpp"
#include "spmd/dtype.h"

// As kernels/device/common.hpp defines it (an identical definition may be
// repeated), so that the two headers go together in any order.
#ifndef SPMD_HD
#if defined(__CUDACC__)
#define SPMD_HD __host__ __device__ inline
#else
#define SPMD_HD inline
#endif
#endif

namespace spmd::dev::collective {

template <typename To, typename From>
SPMD_HD To bit_copy(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  memcpy(&to, &from, sizeof to);
  return to;
}

// IEEE formats on their bits: f32 and f64.
template <typename T>
struct FloatBits;
template <>
struct FloatBits<float> {
  using U = uint32_t;
  static constexpr U kSign = 0x80000000u;
  static constexpr U kInf = 0x7f800000u;
  static constexpr U kMinNormal = 0x00800000u;
  static constexpr U kQuiet = 0x00400000u;
  static constexpr U kIndefinite = 0xffc00000u;  // x86's NaN of an invalid operation
};
template <>
struct FloatBits<double> {
  using U = uint64_t;
  static constexpr U kSign = 0x8000000000000000ull;
  static constexpr U kInf = 0x7ff0000000000000ull;
  static constexpr U kMinNormal = 0x0010000000000000ull;
  static constexpr U kQuiet = 0x0008000000000000ull;
  static constexpr U kIndefinite = 0xfff8000000000000ull;
};

template <typename T>
SPMD_HD bool is_nan(T x) {
  using B = FloatBits<T>;
  return (bit_copy<typename B::U>(x) & ~B::kSign) > B::kInf;
}

// A subnormal becomes a zero of its sign (x86's DAZ and FTZ).
template <typename T>
SPMD_HD T flush(T x) {
  using B = FloatBits<T>;
  using U = typename B::U;
  U b = bit_copy<U>(x);
  b &= (b & ~B::kSign) < B::kMinNormal ? B::kSign : ~U(0);
  return bit_copy<T>(b);
}

// acc + x as XLA's CPU code adds on x86-64: operands and result flushed, a
// NaN operand returned quieted (the first one), an invalid sum the
// indefinite NaN.
template <typename T>
SPMD_HD T add_flushed(T acc, T x) {
  using B = FloatBits<T>;
  using U = typename B::U;
  if (is_nan(acc)) return bit_copy<T>(bit_copy<U>(acc) | B::kQuiet);
  if (is_nan(x)) return bit_copy<T>(bit_copy<U>(x) | B::kQuiet);
  const T sum = acc + flush(x);
  if (is_nan(sum)) return bit_copy<T>(B::kIndefinite);
  return flush(sum);
}

// std::max and std::min as XLA's CPU collectives compare: on a tie (+0 and
// -0) the accumulated value stays; a NaN wins, the earliest one, unchanged.
template <typename T>
SPMD_HD T max_keep(T acc, T x) {
  if (is_nan(acc)) return acc;
  if (is_nan(x)) return x;
  return acc < x ? x : acc;
}
template <typename T>
SPMD_HD T min_keep(T acc, T x) {
  if (is_nan(acc)) return acc;
  if (is_nan(x)) return x;
  return x < acc ? x : acc;
}

// ---- 16-bit floats, as base/dtype.hpp converts them ----

SPMD_HD float widen_bf16(uint16_t h) { return bit_copy<float>(uint32_t(h) << 16); }

// Round to nearest even, NaN kept and quieted (f32_to_bf16_bits).
SPMD_HD uint16_t narrow_bf16(float f) {
  const uint32_t x = bit_copy<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// f16_bits_to_f32 in integer operations (subnormals normalised by shifts).
SPMD_HD float widen_f16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t rest = h & 0x7fffu;
  uint32_t bits;
  if (rest >= 0x7c00u) {  // inf, NaN
    bits = sign | 0x7f800000u | ((rest & 0x3ffu) << 13);
  } else if (rest >= 0x0400u) {  // normal: rebias the exponent
    bits = sign | ((rest << 13) + 0x38000000u);
  } else if (rest == 0) {
    bits = sign;
  } else {  // subnormal: rest * 2^-24, its leading bit moved to bit 10
    uint32_t m = rest, exponent = 113;
    while ((m & 0x400u) == 0) {
      m <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((m & 0x3ffu) << 13);
  }
  return bit_copy<float>(bits);
}

// f32_to_f16_bits in integer operations: round to nearest even, overflow
// to inf, NaN to the quiet NaN of its sign, f32 subnormals to zero.
SPMD_HD uint16_t narrow_f16(float f) {
  const uint32_t x = bit_copy<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520
  if (abs < 0x38800000u) {  // a half subnormal: |f| * 2^24 rounded to an integer
    const uint32_t exponent = abs >> 23;
    if (exponent < 102) return uint16_t(sign);  // below 2^-25: rounds to zero
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14 .. 24
    uint32_t m = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (m & 1u))) ++m;
    return uint16_t(sign | m);
  }
  uint32_t h = (abs - 0x38000000u) >> 13;
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

// a rounded to the nearest f16 (ties to even) and kept as a float, as
// Eigen::half's arithmetic rounds after every addition: exact below the
// smallest normal f16, inf from 65520 up.
SPMD_HD float round_to_f16(float v) {
  uint32_t x = bit_copy<uint32_t>(v);
  const uint32_t abs = x & 0x7fffffffu;
  const uint32_t rounded = (x + 0xfffu + ((x >> 13) & 1u)) & ~0x1fffu;
  const uint32_t inf = (x & 0x80000000u) | 0x7f800000u;
  x = abs < 0x38800000u ? x : abs < 0x477ff000u ? rounded : abs <= 0x7f800000u ? inf : x;
  return bit_copy<float>(x);
}

// ---- the reductions, one per dtype and op ----

template <spmd_dtype D>
struct ElemOf;
template <> struct ElemOf<SPMD_F32> { using type = float; };
template <> struct ElemOf<SPMD_F64> { using type = double; };
template <> struct ElemOf<SPMD_F16> { using type = uint16_t; };
template <> struct ElemOf<SPMD_BF16> { using type = uint16_t; };
template <> struct ElemOf<SPMD_I32> { using type = int32_t; };
template <> struct ElemOf<SPMD_I64> { using type = int64_t; };
template <> struct ElemOf<SPMD_U8> { using type = uint8_t; };
template <> struct ElemOf<SPMD_BOOL> { using type = uint8_t; };
template <> struct ElemOf<SPMD_I8> { using type = int8_t; };
template <> struct ElemOf<SPMD_I16> { using type = int16_t; };
template <> struct ElemOf<SPMD_U16> { using type = uint16_t; };
template <> struct ElemOf<SPMD_U32> { using type = uint32_t; };

// f32 and f64: the accumulator is the element.
template <typename T, ReduceOp Op>
struct FloatReduction {
  using Elem = T;
  using Acc = T;
  static constexpr bool kResumable = true;
  SPMD_HD static Acc start(Elem x) { return Op == ReduceOp::Sum ? add_flushed(T(0), x) : flush(x); }
  SPMD_HD static Acc step(Acc acc, Elem x) {
    if constexpr (Op == ReduceOp::Sum)
      return add_flushed(acc, x);
    else if constexpr (Op == ReduceOp::Max)
      return max_keep(acc, flush(x));
    else
      return min_keep(acc, flush(x));
  }
  SPMD_HD static Elem finish(Acc acc) { return acc; }
  SPMD_HD static Acc resume(Elem partial) { return partial; }
};

// Integers (bool's max and min are any and all on 0/1 bytes): sums wrap,
// computed in the unsigned type.
template <typename T, ReduceOp Op>
struct IntReduction {
  using Elem = T;
  using Acc = T;
  static constexpr bool kResumable = true;
  SPMD_HD static Acc start(Elem x) { return x; }
  SPMD_HD static Acc step(Acc acc, Elem x) {
    if constexpr (Op == ReduceOp::Sum) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(acc) + static_cast<U>(x)));
    } else if constexpr (Op == ReduceOp::Max) {
      return acc > x ? acc : x;
    } else {
      return acc < x ? acc : x;
    }
  }
  SPMD_HD static Elem finish(Acc acc) { return acc; }
  SPMD_HD static Acc resume(Elem partial) { return partial; }
};

// f16 and bf16, accumulated in f32. bf16 runs as f32 does (flushing) and
// rounds once at the end, so its partial sums do not fit the element:
// not resumable. f16 sums round to f16 after every addition, so every
// partial result is an f16 value (a NaN's payload is dropped by the final
// conversion anyway).
template <ReduceOp Op, bool Bf16>
struct HalfReduction {
  using Elem = uint16_t;
  using Acc = float;
  static constexpr bool kResumable = !(Bf16 && Op == ReduceOp::Sum);
  SPMD_HD static float widen(Elem h) { return Bf16 ? widen_bf16(h) : widen_f16(h); }
  SPMD_HD static Acc start(Elem h) {
    const float x = widen(h);
    if constexpr (Op == ReduceOp::Sum)
      return add_flushed(0.0f, x);  // f16 values are never f32 subnormals
    else
      return Bf16 ? flush(x) : x;
  }
  SPMD_HD static Acc step(Acc acc, Elem h) {
    const float x = widen(h);
    if constexpr (Op == ReduceOp::Sum)
      return Bf16 ? add_flushed(acc, x) : round_to_f16(add_flushed(acc, x));
    else if constexpr (Op == ReduceOp::Max)
      return max_keep(acc, Bf16 ? flush(x) : x);
    else
      return min_keep(acc, Bf16 ? flush(x) : x);
  }
  SPMD_HD static Elem finish(Acc acc) { return Bf16 ? narrow_bf16(acc) : narrow_f16(acc); }
  SPMD_HD static Acc resume(Elem partial) { return widen(partial); }
};

template <spmd_dtype D, ReduceOp Op>
struct Reduction
    : std::conditional_t<
          D == SPMD_F32 || D == SPMD_F64, FloatReduction<typename ElemOf<D>::type, Op>,
          std::conditional_t<D == SPMD_F16 || D == SPMD_BF16, HalfReduction<Op, D == SPMD_BF16>,
                             IntReduction<typename ElemOf<D>::type, Op>>> {};

// Calls f(Reduction<D, Op>{}) for the run-time dtype and op; false, calling
// nothing, for a combination no collective reduces (a sum of bools, an
// unknown dtype).
template <ReduceOp Op, typename F>
bool visit_reduction_of(spmd_dtype dtype, F &&f) {
  switch (dtype) {
    case SPMD_F32: f(Reduction<SPMD_F32, Op>{}); return true;
    case SPMD_F64: f(Reduction<SPMD_F64, Op>{}); return true;
    case SPMD_F16: f(Reduction<SPMD_F16, Op>{}); return true;
    case SPMD_BF16: f(Reduction<SPMD_BF16, Op>{}); return true;
    case SPMD_I32: f(Reduction<SPMD_I32, Op>{}); return true;
    case SPMD_I64: f(Reduction<SPMD_I64, Op>{}); return true;
    case SPMD_U8: f(Reduction<SPMD_U8, Op>{}); return true;
    case SPMD_I8: f(Reduction<SPMD_I8, Op>{}); return true;
    case SPMD_I16: f(Reduction<SPMD_I16, Op>{}); return true;
    case SPMD_U16: f(Reduction<SPMD_U16, Op>{}); return true;
    case SPMD_U32: f(Reduction<SPMD_U32, Op>{}); return true;
    case SPMD_BOOL:
      if constexpr (Op == ReduceOp::Sum) {
        return false;
      } else {
        f(Reduction<SPMD_BOOL, Op>{});
        return true;
      }
    default: return false;
  }
}

template <typename F>
bool visit_reduction(spmd_dtype dtype, ReduceOp op, F &&f) {
  switch (op) {
    case ReduceOp::Sum: return visit_reduction_of<ReduceOp::Sum>(dtype, f);
    case ReduceOp::Max: return visit_reduction_of<ReduceOp::Max>(dtype, f);
    case ReduceOp::Min: return visit_reduction_of<ReduceOp::Min>(dtype, f);
  }
  return false;
}

}  // namespace spmd::dev::collective
