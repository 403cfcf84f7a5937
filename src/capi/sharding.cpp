#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "spmd/sharding.h"

using namespace spmd;
using namespace spmd::capi;

namespace spmd::capi {
// Fills a caller's spmd_shard_info (whose struct_size the caller set).
void write_shard_info(const ShardLayout &s, spmd_shard_info *out) {
  spmd_shard_info info = SPMD_SHARD_INFO_INIT;
  info.device = s.device;
  info.replica_id = s.replica_id;
  info.ndim = s.box.ndim();
  for (size_t d = 0; d < s.box.ndim(); ++d) {
    info.start[d] = s.box.start[d];
    info.stop[d] = s.box.stop[d];
    info.local_shape[d] = s.box.stop[d] - s.box.start[d];
  }
  write_result_struct(out, info, offsetof(spmd_shard_info, device) + sizeof info.device, "out",
                      "SPMD_SHARD_INFO_INIT");
}
}  // namespace spmd::capi

extern "C" {

spmd_status spmd_shard_info_init(spmd_shard_info *info, size_t size) {
  return guard(__func__, [&] {
    init_struct(info, size, spmd_shard_info SPMD_SHARD_INFO_INIT, "info");
  });
}

spmd_status spmd_sharding_named(const spmd_mesh *mesh, const spmd_spec *spec,
                                spmd_sharding **out) {
  return guard(__func__, [&] {
    const auto &m = use(mesh, "mesh");
    const auto &s = use(spec, "spec");
    out_arg(out);
    *out = new_handle<spmd_sharding>(Sharding::named(m.impl, s.impl));
  });
}

spmd_status spmd_sharding_named_text(const spmd_mesh *mesh, const char *spec,
                                     spmd_sharding **out) {
  return guard(__func__, [&] {
    const auto &m = use(mesh, "mesh");
    out_arg(out);
    if (spec == nullptr) invalid("spec: NULL");
    *out = new_handle<spmd_sharding>(Sharding::named(m.impl, PartitionSpec::parse(spec)));
  });
}

spmd_status spmd_sharding_replicated(const spmd_mesh *mesh, spmd_sharding **out) {
  return guard(__func__, [&] {
    const auto &m = use(mesh, "mesh");
    out_arg(out);
    *out = new_handle<spmd_sharding>(Sharding::named(m.impl, PartitionSpec()));
  });
}

spmd_status spmd_sharding_single_device(spmd_runtime *runtime, int device_id,
                                        spmd_sharding **out) {
  return guard(__func__, [&] {
    auto &rt = use(runtime, "runtime");
    out_arg(out);
    *out = new_handle<spmd_sharding>(Sharding::single_device(rt.impl, device_id));
  });
}

void spmd_sharding_destroy(spmd_sharding *sharding) { destroy_handle(sharding); }

spmd_status spmd_sharding_get_kind(const spmd_sharding *sharding, spmd_sharding_kind *out) {
  return guard(__func__, [&] {
    const auto &s = *use(sharding, "sharding").impl;
    *out_arg(out) = s.kind() == Sharding::Kind::Named ? SPMD_SHARDING_NAMED
                                                      : SPMD_SHARDING_SINGLE_DEVICE;
  });
}

spmd_status spmd_sharding_mesh(const spmd_sharding *sharding, spmd_mesh **out) {
  return guard(__func__, [&] {
    const auto &s = *use(sharding, "sharding").impl;
    produce(out, [&] { return new_handle<spmd_mesh>(s.mesh()); });
  });
}

spmd_status spmd_sharding_spec(const spmd_sharding *sharding, spmd_spec **out) {
  return guard(__func__, [&] {
    const auto &s = *use(sharding, "sharding").impl;
    produce(out, [&] { return new_handle<spmd_spec>(s.spec()); });
  });
}

spmd_status spmd_sharding_device_count(const spmd_sharding *sharding, size_t *out) {
  return guard(__func__, [&] {
    produce(out, [&] { return use(sharding, "sharding").impl->device_count(); });
  });
}

spmd_status spmd_sharding_equal(const spmd_sharding *a, const spmd_sharding *b, int *out) {
  return guard(__func__, [&] {
    const auto &sa = *use(a, "a").impl;
    const auto &sb = *use(b, "b").impl;
    produce(out, [&] { return sa.equivalent(sb); });
  });
}

spmd_status spmd_sharding_is_fully_replicated(const spmd_sharding *sharding, int *out) {
  return guard(__func__, [&] {
    produce(out, [&] { return use(sharding, "sharding").impl->fully_replicated(); });
  });
}

spmd_status spmd_sharding_to_string(const spmd_sharding *sharding, char **out) {
  return guard(__func__, [&] {
    produce(out, [&] { return to_c_string(use(sharding, "sharding").impl->to_string()); });
  });
}

spmd_status spmd_sharding_shard_info(const spmd_sharding *sharding, size_t ndim,
                                     const int64_t *shape, size_t index, spmd_shard_info *out) {
  return guard(__func__, [&] {
    const auto &s = *use(sharding, "sharding").impl;
    out_arg(out);
    const Shape global = checked_shape("shape", ndim, shape);
    if (index >= s.device_count())
      fail(SPMD_ERR_OUT_OF_RANGE, "index: shard ", index, " does not exist (the sharding has ",
           s.device_count(), " devices)");
    write_shard_info(s.layout(global)[index], out);
  });
}

spmd_status spmd_sharding_shard_info_of_device(const spmd_sharding *sharding, size_t ndim,
                                               const int64_t *shape, int device_id,
                                               spmd_shard_info *out) {
  return guard(__func__, [&] {
    const auto &s = *use(sharding, "sharding").impl;
    out_arg(out);
    const Shape global = checked_shape("shape", ndim, shape);
    const int position = s.mesh()->position_of(device_id);
    if (position < 0)
      invalid("device_id: the sharding places nothing on device ", device_id, " (",
              s.to_string(), ")");
    write_shard_info(s.layout(global)[static_cast<size_t>(position)], out);
  });
}

}  // extern "C"
