// The text picture of a sharding, as jax.debug.visualize_array_sharding
// draws it without colour (a rich table with square box lines).
#pragma once

#include <string>

#include "core/sharding.hpp"

namespace spmd {

// The largest picture: options beyond these are refused (the C API says so).
inline constexpr int kMaxPictureWidth = 1000;
inline constexpr double kMaxPictureScale = 100.0;

struct PictureOptions {
  bool ascii = false;
  int max_width = 80;
  int min_width = 9;
  double scale = 1.0;
};

std::string visualize_sharding(const Sharding &sharding, const Shape &shape,
                               const PictureOptions &options);

}  // namespace spmd
