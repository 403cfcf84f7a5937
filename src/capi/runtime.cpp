#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "spmd/runtime.h"

using namespace spmd;
using namespace spmd::capi;

extern "C" {

spmd_status spmd_runtime_options_init(spmd_runtime_options *options, size_t size) {
  return guard(__func__, [&] {
    init_struct(options, size, spmd_runtime_options SPMD_RUNTIME_OPTIONS_INIT, "options");
  });
}

spmd_status spmd_device_info_init(spmd_device_info *info, size_t size) {
  return guard(__func__, [&] {
    init_struct(info, size, spmd_device_info SPMD_DEVICE_INFO_INIT, "info");
  });
}

spmd_status spmd_runtime_create(const spmd_runtime_options *options, spmd_runtime **out) {
  return guard(__func__, [&] {
    out_arg(out);
    const auto o = read_options(options, spmd_runtime_options SPMD_RUNTIME_OPTIONS_INIT, "options");
    *out = new_handle<spmd_runtime>(Runtime::create(o));
  });
}

void spmd_runtime_destroy(spmd_runtime *runtime) { destroy_handle(runtime); }

spmd_status spmd_runtime_device_count(const spmd_runtime *runtime, int *out) {
  return guard(__func__, [&] {
    const auto &rt = use(runtime, "runtime");
    produce(out, [&] { return rt.impl->device_count(); });
  });
}

spmd_status spmd_runtime_process_index(const spmd_runtime *runtime, int *out) {
  return guard(__func__, [&] {
    const auto &rt = use(runtime, "runtime");
    produce(out, [&] { return rt.impl->process_index(); });
  });
}

spmd_status spmd_runtime_process_count(const spmd_runtime *runtime, int *out) {
  return guard(__func__, [&] {
    const auto &rt = use(runtime, "runtime");
    produce(out, [&] { return rt.impl->process_count(); });
  });
}

spmd_status spmd_runtime_local_device_count(const spmd_runtime *runtime, int *out) {
  return guard(__func__, [&] {
    const auto &rt = use(runtime, "runtime");
    produce(out, [&] { return rt.impl->local_device_count(); });
  });
}

spmd_status spmd_runtime_platform(const spmd_runtime *runtime, spmd_platform *out) {
  return guard(__func__, [&] {
    const auto &rt = use(runtime, "runtime");
    produce(out, [&] { return rt.impl->platform(); });
  });
}

spmd_status spmd_runtime_device_info(const spmd_runtime *runtime, int device_id,
                                     spmd_device_info *out) {
  return guard(__func__, [&] {
    const auto &rt = use(runtime, "runtime");
    out_arg(out);
    checked_struct_size(out->struct_size, "out");
    const DeviceInfo d = rt.impl->device_info(device_id);
    spmd_device_info info = SPMD_DEVICE_INFO_INIT;
    info.id = d.id;
    info.platform = d.platform;
    info.platform_name = d.platform_name;
    info.kind = d.kind;
    info.process_index = d.process_index;
    info.local_index = d.local_index;
    info.memory_bytes = d.memory_bytes;
    info.compute_capability = d.compute_capability;
    write_result_struct(out, info, offsetof(spmd_device_info, id) + sizeof info.id, "out",
                        "SPMD_DEVICE_INFO_INIT");
  });
}

spmd_status spmd_runtime_device_to_string(const spmd_runtime *runtime, int device_id,
                                          char **out) {
  return guard(__func__, [&] {
    const auto &rt = use(runtime, "runtime");
    out_arg(out);
    rt.impl->check_device("device_id", device_id);
    *out = to_c_string(rt.impl->device_repr(device_id));
  });
}

}  // extern "C"
