// The IEEE maximum / minimum under DAZ as an integer order, so that a row's
// max or min is a loop of integer max / min the compiler vectorises: a
// float's bits, flushed to its signed zero when subnormal, with a
// negative's other bits flipped, compare as signed integers in the float's
// order, -0 just below +0. (The map is its own inverse. NaNs are left to
// the caller.) For the reductions (kernels/reduce_axes.cpp) and the vector
// table's row max and min (kernels/vector_math_isa.inc, vmath::KeyFold).
#pragma once

#include <limits>
#include <type_traits>

#include "kernels/device/common.hpp"
#include "kernels/device/cpu_float.hpp"

namespace spmd::order {

template <typename S>
S flip_negative(S k) {
  return k < 0 ? static_cast<S>(k ^ std::numeric_limits<S>::max()) : k;
}

// On the bits alone (no float operation, no branch), so that a loop of
// keys vectorises.
template <typename A>
auto key(A x) {
  using B = dev::FloatBits<A>;
  using S = std::make_signed_t<typename B::U>;
  typename B::U b = dev::bits_of(x);
  b = (b & B::kExponent) == 0 ? b & B::kSign : b;  // DAZ
  return flip_negative(static_cast<S>(b));
}

template <typename A, typename S>
A from_key(S k) {
  return dev::float_of<A>(static_cast<typename dev::FloatBits<A>::U>(flip_negative(k)));
}

}  // namespace spmd::order
