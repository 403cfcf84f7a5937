// Shapes and boxes (n-dimensional index ranges) shared by the index math,
// the redistribution planner and the backends.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spmd {

using Shape = std::vector<int64_t>;

inline int64_t shape_elements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// "(3, 8)", "(8,)", "()": Python's tuple repr, as JAX prints shapes.
std::string shape_to_string(const Shape &shape);

// A half-open n-dimensional range [start, stop) of a global array.
struct Box {
  Shape start;
  Shape stop;

  size_t ndim() const { return start.size(); }
  Shape extent() const;
  int64_t elements() const;
  bool empty() const;
  bool operator==(const Box &other) const = default;
};

// The overlap of two boxes of the same rank (possibly empty).
Box intersect(const Box &a, const Box &b);

// Checks a caller's shape: rank within SPMD_MAX_NDIM, no negative sizes.
// Throws INVALID_ARGUMENT naming `what`.
Shape checked_shape(const char *what, size_t ndim, const int64_t *dims);

}  // namespace spmd
