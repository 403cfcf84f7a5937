#include "base/dtype.hpp"

// Enums arrive from C as any int: read as integers, then converted only when
// valid (base/raw_enum.hpp).
extern "C" {
size_t spmd_dtype_size(spmd_dtype dtype) {
  return spmd::dtype_valid(dtype) ? spmd::dtype_size(spmd::valid_dtype(dtype)) : 0;
}
const char *spmd_dtype_name(spmd_dtype dtype) {
  return spmd::dtype_valid(dtype) ? spmd::dtype_name(spmd::valid_dtype(dtype)) : nullptr;
}
}
