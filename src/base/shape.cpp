#include "base/shape.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "spmd/sharding.h"

namespace spmd {

std::string shape_to_string(const Shape &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

Shape Box::extent() const {
  Shape e(start.size());
  for (size_t i = 0; i < start.size(); ++i) e[i] = stop[i] - start[i];
  return e;
}

int64_t Box::elements() const {
  int64_t n = 1;  // without making the extent: this is asked per shard per op
  for (size_t i = 0; i < start.size(); ++i) n *= stop[i] - start[i];
  return n;
}

bool Box::empty() const {
  for (size_t i = 0; i < start.size(); ++i)
    if (stop[i] <= start[i]) return true;
  return false;
}

Box intersect(const Box &a, const Box &b) {
  Box r{Shape(a.ndim()), Shape(a.ndim())};
  for (size_t i = 0; i < a.ndim(); ++i) {
    r.start[i] = std::max(a.start[i], b.start[i]);
    r.stop[i] = std::max(r.start[i], std::min(a.stop[i], b.stop[i]));
  }
  return r;
}

Shape checked_shape(const char *what, size_t ndim, const int64_t *dims) {
  if (ndim > SPMD_MAX_NDIM)
    invalid(what, ": ", ndim, " dimensions, at most ", SPMD_MAX_NDIM,
            " are supported");
  if (ndim > 0 && dims == nullptr) invalid(what, ": NULL with ndim ", ndim);
  Shape s(dims, dims + ndim);
  for (size_t i = 0; i < ndim; ++i) {
    if (s[i] < 0)
      invalid(what, " ", shape_to_string(s), ": dimension ", i,
              " has negative size ", s[i]);
  }
  // The non-zero dimensions together stay within 2^62 elements, whatever
  // the order (a zero-sized dimension counts as 1, so strides fit too).
  int64_t n = 1;
  for (size_t i = 0; i < ndim; ++i) {
    if (s[i] == 0) continue;
    if (n > (int64_t{1} << 62) / s[i])
      invalid(what, " ", shape_to_string(s), ": too many elements (its non-zero dimensions span "
              "more than 2^62)");
    n *= s[i];
  }
  return s;
}

}  // namespace spmd
