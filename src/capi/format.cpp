#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include <vector>

#include "core/format.hpp"
#include "spmd/format.h"

using namespace spmd;
using namespace spmd::capi;

namespace {
// The array's values on the host, for printing.
std::vector<unsigned char> host_copy(const Array &a) {
  std::vector<unsigned char> host(a.nbytes());
  a.to_host(host.data(), host.size());
  return host;
}
}  // namespace

extern "C" {

spmd_status spmd_array_repr(const spmd_array *array, char **out) {
  return guard(__func__, [&] {
    const ArrayHold a(array, "array");
    out_arg(out);
    *out = to_c_string(array_repr(a->dtype(), a->shape(), host_copy(*a).data()));
  });
}

spmd_status spmd_array_str(const spmd_array *array, char **out) {
  return guard(__func__, [&] {
    const ArrayHold a(array, "array");
    out_arg(out);
    *out = to_c_string(array_str(a->dtype(), a->shape(), host_copy(*a).data()));
  });
}

}  // extern "C"
