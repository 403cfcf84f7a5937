#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "core/format.hpp"
#include "spmd/format.h"

using namespace spmd;
using namespace spmd::capi;

extern "C" {

spmd_status spmd_array_repr(const spmd_array *array, char **out) {
  return guard(__func__, [&] {
    const auto &a = *use(array, "array").impl;
    out_arg(out);
    *out = to_c_string(array_repr(a));
  });
}

spmd_status spmd_array_str(const spmd_array *array, char **out) {
  return guard(__func__, [&] {
    const auto &a = *use(array, "array").impl;
    out_arg(out);
    *out = to_c_string(array_str(a));
  });
}

}  // extern "C"
