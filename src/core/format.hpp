// Printing arrays as JAX does: repr(a) ("Array([1., 2.], dtype=float32)")
// and print(a) ("[1. 2.]"), which follow numpy's array formatting with its
// default print options.
#pragma once

#include <cstddef>
#include <string>

#include "base/shape.hpp"
#include "spmd/dtype.h"

namespace spmd {

// numpy's default print options.
struct PrintOptions {
  int precision = 8;         // most fractional digits of a float
  int64_t threshold = 1000;  // more elements than this are summarised
  int64_t edgeitems = 3;     // elements kept at each end when summarised
  int64_t linewidth = 75;    // characters per line
};

// numpy.array2string of a row-major host buffer of `shape` and `dtype`, with
// the element `separator`, a `prefix` whose length indents continuation
// lines, and a `suffix` whose length is kept free on the last line. A
// 0-dimensional array gives its one element; an empty one gives "[]".
std::string array2string(spmd_dtype dtype, const Shape &shape, const void *data,
                         const std::string &separator, const std::string &prefix,
                         const std::string &suffix, const PrintOptions &options = {});

// str() of one element as a numpy scalar ("276.0", "1e-05", "True").
std::string scalar_str(spmd_dtype dtype, const void *element);

// JAX's repr(a) and str(a) (what print(a) shows) of an array whose values
// are the row-major host buffer `data`.
std::string array_repr(spmd_dtype dtype, const Shape &shape, const void *data);
std::string array_str(spmd_dtype dtype, const Shape &shape, const void *data);

}  // namespace spmd
