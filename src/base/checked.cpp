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
  // The span of the non-zero dimensions, so that the rule does not depend
  // on where a zero stands (see the header).
  uint64_t elements = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) invalid(what, " ", shape_to_string(shape), ": a dimension is negative");
    if (d == 0) {
      empty = true;
      continue;
    }
    const auto next = checked_mul(elements, static_cast<uint64_t>(d));
    if (!next)
      invalid(what, " ", shape_to_string(shape), ": too many elements (its non-zero dimensions "
              "span more than 2^62 bytes)");
    elements = *next;
  }
  const auto bytes = checked_mul(elements, dtype_size(dtype));
  if (!bytes)
    invalid(what, " ", shape_to_string(shape), ": ", elements,
            empty ? " elements (counting its non-zero dimensions)" : " elements", " of ",
            dtype_name(dtype), " need more than 2^62 bytes");
  return empty ? 0 : static_cast<size_t>(*bytes);
}

}  // namespace spmd
