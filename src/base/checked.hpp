// Sizes that cannot wrap. Every byte count libspmd derives from a caller's
// shape goes through here: a count times an element size, or a sum of
// sizes, that does not fit in kMaxBytes is refused instead of wrapping
// around (an element count alone is capped at 2^62 by checked_shape, but
// times 8 bytes it would not fit in 64 bits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "base/shape.hpp"
#include "spmd/dtype.h"

namespace spmd {

// The largest byte count of one array, block or buffer: 2^62.
inline constexpr uint64_t kMaxBytes = uint64_t{1} << 62;

// a * b and a + b, or nothing when the result exceeds kMaxBytes.
std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b);
std::optional<uint64_t> checked_add(uint64_t a, uint64_t b);

// The bytes of an array of `shape` and `dtype` (a valid dtype). Throws
// INVALID_ARGUMENT naming `what` and the shape when its non-zero dimensions
// together span more than kMaxBytes: an array with a zero-sized dimension
// is bounded as if that dimension were 1, so {0, 2^62} of f32 is refused
// whatever the order of its dimensions, and every stride in bytes of an
// accepted shape fits (docs/compute.md).
size_t byte_size(const char *what, const Shape &shape, spmd_dtype dtype);

}  // namespace spmd
