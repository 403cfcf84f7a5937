#include "base/dtype.hpp"

extern "C" {
size_t spmd_dtype_size(spmd_dtype dtype) { return spmd::dtype_size(dtype); }
const char *spmd_dtype_name(spmd_dtype dtype) { return spmd::dtype_name(dtype); }
}
