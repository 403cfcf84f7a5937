// ABI enums arrive from C, where any int may be passed. Reading an
// out-of-range value through the C++ enum type is undefined, so validation
// reads the bits as the integer they are.
#pragma once

#include <cstring>
#include <type_traits>

namespace spmd {

template <typename E>
int raw_enum(const E &value) {
  static_assert(std::is_enum_v<E> && sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &value, sizeof v);
  return v;
}

}  // namespace spmd
