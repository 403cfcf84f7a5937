#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "exec/program/program.hpp"
#include "runtime/checkpoint.hpp"
#include "base/dtype.hpp"
#include "spmd/array.h"

using namespace spmd;
using namespace spmd::capi;

namespace {

// The checks every array constructor shares, then `make(sharding, shape)`
// builds the array; errors carry the public function's name.
template <typename Make>
spmd_status construct(const char *function, const spmd_sharding *sharding, const spmd_dtype &dtype,
                      size_t ndim, const int64_t *shape, spmd_array **out, Make &&make) {
  return guard(function, [&] {
    const auto &s = use(sharding, "sharding");
    out_arg(out);
    check_dtype("dtype", dtype);
    *out = new_handle<spmd_array>(make(s.impl, checked_shape("shape", ndim, shape)));
  });
}
}  // namespace

extern "C" {

spmd_status spmd_array_from_host(const spmd_sharding *sharding, spmd_dtype dtype, size_t ndim,
                                 const int64_t *shape, const void *data, size_t nbytes,
                                 spmd_array **out) {
  return construct(__func__, sharding, dtype, ndim, shape, out,
                   [&](const ShardingPtr &s, Shape global) {
                     return Array::from_host(s, dtype, std::move(global), data, nbytes);
                   });
}

spmd_status spmd_array_from_process_local_data(const spmd_sharding *sharding, spmd_dtype dtype,
                                               size_t ndim, const int64_t *shape,
                                               const void *data, size_t nbytes,
                                               spmd_array **out) {
  return construct(__func__, sharding, dtype, ndim, shape, out,
                   [&](const ShardingPtr &s, Shape global) {
                     return Array::from_process_local_data(s, dtype, std::move(global), data,
                                                           nbytes);
                   });
}

spmd_status spmd_array_from_single_device_arrays(const spmd_sharding *sharding,
                                                 spmd_dtype dtype, size_t ndim,
                                                 const int64_t *shape, size_t count,
                                                 const spmd_array *const *arrays,
                                                 spmd_array **out) {
  return guard(__func__, [&] {
    const auto &s = use(sharding, "sharding");
    out_arg(out);
    check_dtype("dtype", dtype);
    const Shape global = checked_shape("shape", ndim, shape);
    if (arrays == nullptr && count > 0) invalid("arrays: NULL for ", count, " arrays");
    if (count > 4096) invalid("count: ", count, " arrays; a runtime has at most 4096 devices");
    // Every array is held while it is read.
    std::vector<ArrayHold> holds;
    std::vector<const Array *> blocks;
    holds.reserve(count);
    for (size_t k = 0; k < count; ++k) {
      const std::string arg = cat("arrays[", k, "]");
      holds.emplace_back(arrays[k], arg.c_str());
      blocks.push_back(holds.back().ptr().get());
    }
    *out = new_handle<spmd_array>(
        Array::from_single_device_arrays(s.impl, dtype, global, blocks));
  });
}

spmd_status spmd_array_process_local_shape(const spmd_sharding *sharding, size_t ndim,
                                           const int64_t *shape, int64_t *out) {
  return guard(__func__, [&] {
    const auto &s = use(sharding, "sharding");
    const Shape global = checked_shape("shape", ndim, shape);
    if (out == nullptr && ndim > 0) invalid("out: NULL");
    s.impl->check_rank(global);
    const Shape extent = Array::local_part(*s.impl, global).extent();
    for (size_t k = 0; k < extent.size(); ++k) out[k] = extent[k];
  });
}

spmd_status spmd_array_zeros(const spmd_sharding *sharding, spmd_dtype dtype, size_t ndim,
                             const int64_t *shape, spmd_array **out) {
  return construct(__func__, sharding, dtype, ndim, shape, out,
                   [&](const ShardingPtr &s, Shape global) {
                     return Array::full(s, dtype, std::move(global), 0.0);
                   });
}

spmd_status spmd_array_full(const spmd_sharding *sharding, spmd_dtype dtype, size_t ndim,
                            const int64_t *shape, double value, spmd_array **out) {
  return construct(__func__, sharding, dtype, ndim, shape, out,
                   [&](const ShardingPtr &s, Shape global) {
                     return Array::full(s, dtype, std::move(global), value);
                   });
}

spmd_status spmd_array_arange(const spmd_sharding *sharding, spmd_dtype dtype, size_t ndim,
                              const int64_t *shape, double start, double step, spmd_array **out) {
  return construct(__func__, sharding, dtype, ndim, shape, out,
                   [&](const ShardingPtr &s, Shape global) {
                     return Array::arange(s, dtype, std::move(global), start, step);
                   });
}

void spmd_array_destroy(spmd_array *array) { destroy_handle(array); }

spmd_status spmd_array_dtype(const spmd_array *array, spmd_dtype *out) {
  return guard(__func__, [&] { produce(out, [&] { return ArrayHold(array, "array", Abstract::Allowed)->dtype(); }); });
}

spmd_status spmd_array_ndim(const spmd_array *array, size_t *out) {
  return guard(__func__, [&] {
    produce(out, [&] { return ArrayHold(array, "array", Abstract::Allowed)->shape().size(); });
  });
}

spmd_status spmd_array_shape(const spmd_array *array, size_t capacity, int64_t *shape,
                             size_t *ndim) {
  return guard(__func__, [&] {
    write_values(ArrayHold(array, "array", Abstract::Allowed)->shape(), capacity, shape, ndim, "shape");
  });
}

spmd_status spmd_array_size(const spmd_array *array, int64_t *out) {
  return guard(__func__, [&] { produce(out, [&] { return ArrayHold(array, "array", Abstract::Allowed)->size(); }); });
}

spmd_status spmd_array_nbytes(const spmd_array *array, size_t *out) {
  return guard(__func__, [&] { produce(out, [&] { return ArrayHold(array, "array", Abstract::Allowed)->nbytes(); }); });
}

spmd_status spmd_array_sharding(const spmd_array *array, spmd_sharding **out) {
  return guard(__func__, [&] {
    const ArrayHold a(array, "array", Abstract::Allowed);
    produce(out, [&] { return new_handle<spmd_sharding>(a->sharding()); });
  });
}

spmd_status spmd_array_device(const spmd_array *array, int *out) {
  return guard(__func__, [&] {
    const ArrayHold a(array, "array", Abstract::Allowed);
    out_arg(out);
    if (a->shard_count() != 1)
      invalid("array: spread over ", a->shard_count(),
              " devices, so it has no single device; its sharding is ", a->sharding()->to_string());
    *out = a->shard(0).device;
  });
}

spmd_status spmd_array_block_until_ready(spmd_array *array) {
  return guard(__func__, [&] { ArrayHold(array, "array")->block_until_ready(); });
}

spmd_status spmd_array_to_host(const spmd_array *array, void *data, size_t nbytes) {
  return guard(__func__, [&] { ArrayHold(array, "array")->to_host(data, nbytes); });
}

spmd_status spmd_array_process_allgather(const spmd_array *array, void *data, size_t nbytes) {
  return guard(__func__,
               [&] { ArrayHold(array, "array")->process_allgather(data, nbytes); });
}

spmd_status spmd_array_save(const spmd_array *array, const char *directory) {
  return guard(__func__, [&] {
    const ArrayHold a(array, "array");
    if (directory == nullptr) invalid("directory: NULL");
    save_array(*a, directory);
  });
}

spmd_status spmd_array_load(const spmd_sharding *sharding, const char *directory,
                            spmd_array **out) {
  return guard(__func__, [&] {
    const auto &s = use(sharding, "sharding");
    out_arg(out);
    if (directory == nullptr) invalid("directory: NULL");
    *out = new_handle<spmd_array>(load_array(s.impl, directory));
  });
}

spmd_status spmd_array_is_fully_addressable(const spmd_array *array, int *out) {
  return guard(__func__, [&] {
    produce(out, [&] { return ArrayHold(array, "array")->fully_addressable() ? 1 : 0; });
  });
}

spmd_status spmd_array_shard_count(const spmd_array *array, size_t *out) {
  return guard(__func__, [&] {
    produce(out, [&] { return ArrayHold(array, "array", Abstract::Allowed)->shard_count(); });
  });
}

spmd_status spmd_array_shard_info(const spmd_array *array, size_t index, spmd_shard_info *out) {
  return guard(__func__, [&] {
    const ArrayHold a(array, "array", Abstract::Allowed);
    out_arg(out);
    if (index >= a->shard_count())
      fail(SPMD_ERR_OUT_OF_RANGE, "index: shard ", index, " does not exist (the array has ",
           a->shard_count(), " shards)");
    write_shard_info(a->shard(index), out);
  });
}

spmd_status spmd_array_shard_info_of_device(const spmd_array *array, int device_id,
                                            spmd_shard_info *out) {
  return guard(__func__, [&] {
    const ArrayHold a(array, "array", Abstract::Allowed);
    out_arg(out);
    const int position = a->sharding()->mesh()->position_of(device_id);
    if (position < 0)
      invalid("device_id: no shard of the array is on device ", device_id, " (its sharding is ",
              a->sharding()->to_string(), ")");
    write_shard_info(a->shard(static_cast<size_t>(position)), out);
  });
}

spmd_status spmd_array_shard_read(const spmd_array *array, size_t index, void *data,
                                  size_t nbytes) {
  return guard(__func__, [&] { ArrayHold(array, "array")->shard_read(index, data, nbytes); });
}

spmd_status spmd_array_shard_write(spmd_array *array, size_t index, const void *data,
                                   size_t nbytes) {
  return guard(__func__, [&] { ArrayHold(array, "array")->shard_write(index, data, nbytes); });
}

spmd_status spmd_array_reshard(const spmd_array *array, const spmd_sharding *sharding,
                               spmd_array **out) {
  return guard(__func__, [&] {
    const ArrayHold a(array, "array", Abstract::Allowed);
    const auto &s = use(sharding, "sharding");
    out_arg(out);
    // Recorded into the array's program when it is a value of one
    // (jax.lax.with_sharding_constraint).
    if (auto program = Program::of({a.ptr()}, {"array"})) {
      ops::OpOptions constraint;
      constraint.function = "spmd_array_reshard";
      constraint.label = "reshard";
      *out = new_handle<spmd_array>(program->record(
          "spmd_array_reshard", {a.ptr()}, constraint,
          [target = s.impl](const std::vector<ArrayPtr> &x, const ops::OpOptions &) {
            return x[0]->laid_out_as(target);
          }));
      return;
    }
    *out = new_handle<spmd_array>(a->laid_out_as(s.impl));
  });
}

}  // extern "C"
