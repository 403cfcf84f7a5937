// spmd/dlpack.h: the arguments checked, the work in runtime/dlpack.cpp.
#include "spmd/dlpack.h"

#include "base/dtype.hpp"
#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "runtime/dlpack.hpp"

using namespace spmd;
using namespace spmd::capi;

extern "C" {

spmd_status spmd_array_shard_to_dlpack(const spmd_array *array, size_t index,
                                       DLManagedTensor **out) {
  return guard(__func__, [&] {
    const ArrayHold a(array, "array");
    out_arg(out);
    *out = export_shard(*a, index);
  });
}

spmd_status spmd_array_from_dlpack(const spmd_sharding *sharding, spmd_dtype dtype, size_t ndim,
                                   const int64_t *shape, size_t count, const int *devices,
                                   DLManagedTensor *const *tensors, spmd_array **out) {
  return guard(__func__, [&] {
    const auto &s = use(sharding, "sharding");
    out_arg(out);
    check_dtype("dtype", dtype);
    Shape global = checked_shape("shape", ndim, shape);
    if (count > 4096) invalid("count: ", count, " tensors; a runtime has at most 4096 devices");
    if (devices == nullptr && count > 0) invalid("devices: NULL for ", count, " tensors");
    if (tensors == nullptr && count > 0) invalid("tensors: NULL for ", count, " tensors");
    const std::vector<int> ids(devices, devices + count);
    const std::vector<DLManagedTensor *> given(tensors, tensors + count);
    AdoptedTensors adopted = adopt_tensors(s.impl, dtype, std::move(global), ids, given);
    spmd_array *handle = new_handle<spmd_array>(std::move(adopted.array));
    *adopted.own = true;  // nothing fails from here: the deleters are the array's
    *out = handle;
  });
}

}  // extern "C"
