#include "base/checked.hpp"

#include "base/dtype.hpp"
#include "base/error.hpp"

namespace spmd {

std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r) || r > kMaxBytes) return std::nullopt;
  return r;
}

std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r) || r > kMaxBytes) return std::nullopt;
  return r;
}

size_t byte_size(const char *what, const Shape &shape, spmd_dtype dtype) {
  uint64_t elements = 1;
  for (int64_t d : shape) {
    const auto next = d < 0 ? std::nullopt : checked_mul(elements, static_cast<uint64_t>(d));
    if (!next)
      invalid(what, " ", shape_to_string(shape), ": too many elements (more than 2^62 bytes)");
    elements = *next;
  }
  const auto bytes = checked_mul(elements, dtype_size(dtype));
  if (!bytes)
    invalid(what, " ", shape_to_string(shape), ": ", elements, " elements of ", dtype_name(dtype),
            " need more than 2^62 bytes");
  return static_cast<size_t>(*bytes);
}

}  // namespace spmd
