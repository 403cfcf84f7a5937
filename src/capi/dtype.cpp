#include <cstring>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "capi/guard.hpp"

// Enums arrive from C as any int: read as integers, then converted only when
// valid (base/raw_enum.hpp).
extern "C" {
size_t spmd_dtype_size(spmd_dtype dtype) {
  return spmd::dtype_valid(dtype) ? spmd::dtype_size(spmd::valid_dtype(dtype)) : 0;
}
const char *spmd_dtype_name(spmd_dtype dtype) {
  return spmd::dtype_valid(dtype) ? spmd::dtype_name(spmd::valid_dtype(dtype)) : nullptr;
}

spmd_status spmd_dtype_from_name(const char *name, spmd_dtype *out) {
  return spmd::capi::guard(__func__, [&] {
    spmd::capi::out_arg(out);
    if (name == nullptr) spmd::invalid("name: NULL");
    std::string known;
    for (int v = SPMD_F32; v <= spmd::kLastDtype; ++v) {
      const auto t = static_cast<spmd_dtype>(v);
      if (std::strcmp(name, spmd::dtype_name(t)) == 0) {
        *out = t;
        return;
      }
      known += spmd::cat(known.empty() ? "" : ", ", spmd::dtype_name(t));
    }
    spmd::invalid("name: '", name, "' is not a dtype (", known, ")");
  });
}
}
