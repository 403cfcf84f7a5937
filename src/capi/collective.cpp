#include "base/checked.hpp"
#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "base/dtype.hpp"
#include "base/raw_enum.hpp"
#include "core/axis_groups.hpp"
#include "exec/persistent.hpp"
#include "spmd/collective.h"

struct spmd_collective {
  std::shared_ptr<spmd::PersistentCollective> impl;
};

namespace spmd::capi {
template <> struct KindOf<spmd_collective> {
  static constexpr HandleKind kind = HandleKind::Collective;
  static constexpr const char *name = "spmd_collective";
};
}  // namespace spmd::capi

using namespace spmd;
using namespace spmd::capi;

namespace {
CollectiveKind collective_kind(const spmd_collective_kind &kind) {
  switch (raw_enum(kind)) {
    case SPMD_COLLECTIVE_PSUM: return CollectiveKind::Psum;
    case SPMD_COLLECTIVE_PMEAN: return CollectiveKind::Pmean;
    case SPMD_COLLECTIVE_PMAX: return CollectiveKind::Pmax;
    case SPMD_COLLECTIVE_PMIN: return CollectiveKind::Pmin;
    case SPMD_COLLECTIVE_ALL_GATHER: return CollectiveKind::AllGather;
    case SPMD_COLLECTIVE_PSUM_SCATTER: return CollectiveKind::PsumScatter;
    case SPMD_COLLECTIVE_ALL_TO_ALL: return CollectiveKind::AllToAll;
    case SPMD_COLLECTIVE_PPERMUTE: return CollectiveKind::Ppermute;
  }
  invalid("kind: ", raw_enum(kind), " is not a spmd_collective_kind");
}
}  // namespace

extern "C" {

spmd_status spmd_collective_options_init(spmd_collective_options *options, size_t size) {
  return guard(__func__, [&] {
    init_struct(options, size, spmd_collective_options SPMD_COLLECTIVE_OPTIONS_INIT, "options");
  });
}

spmd_status spmd_collective_create(const spmd_sharding *input_sharding, spmd_collective_kind kind,
                                   const char *axes, spmd_dtype dtype, size_t ndim,
                                   const int64_t *shape, const spmd_collective_options *options,
                                   spmd_collective **out) {
  return guard(__func__, [&] {
    const auto &s = use(input_sharding, "input_sharding");
    out_arg(out);
    check_dtype("dtype", dtype);
    Shape global = checked_shape("shape", ndim, shape);
    byte_size("shape", global, dtype);  // as every array constructor bounds it
    const auto o = read_options(options, spmd_collective_options SPMD_COLLECTIVE_OPTIONS_INIT,
                                "options");
    CollectiveParams params;
    params.axis = o.axis;
    params.concat_axis = o.concat_axis;
    params.tiled = o.tiled != 0;
    const CollectiveKind k = collective_kind(kind);
    if (k == CollectiveKind::Ppermute) {
      if (o.npairs && o.pairs == nullptr) invalid("options->pairs: NULL for ", o.npairs, " pairs");
      for (size_t i = 0; i < o.npairs; ++i)
        params.pairs.emplace_back(o.pairs[2 * i], o.pairs[2 * i + 1]);
    }
    Collective op(k, parse_axes(*s.impl->mesh(), axes, "axes"), std::move(params));
    const auto timeout = collective_timeout(o.timeout_ms, "options->timeout_ms");
    *out = new_handle<spmd_collective>(
        std::make_shared<PersistentCollective>(s.impl, op, dtype, std::move(global), timeout));
  });
}

void spmd_collective_destroy(spmd_collective *collective) { destroy_handle(collective); }

spmd_status spmd_collective_output_sharding(const spmd_collective *collective,
                                            spmd_sharding **out) {
  return guard(__func__, [&] {
    const auto &c = *use(collective, "collective").impl;
    produce(out, [&] { return new_handle<spmd_sharding>(c.output_sharding()); });
  });
}

spmd_status spmd_collective_output_dtype(const spmd_collective *collective, spmd_dtype *out) {
  return guard(__func__, [&] {
    produce(out, [&] { return use(collective, "collective").impl->output_dtype(); });
  });
}

spmd_status spmd_collective_output_ndim(const spmd_collective *collective, size_t *out) {
  return guard(__func__, [&] {
    produce(out, [&] { return use(collective, "collective").impl->output_shape().size(); });
  });
}

spmd_status spmd_collective_output_shape(const spmd_collective *collective, size_t capacity,
                                          int64_t *shape, size_t *ndim) {
  return guard(__func__, [&] {
    write_values(use(collective, "collective").impl->output_shape(), capacity, shape, ndim,
                 "shape");
  });
}

spmd_status spmd_collective_execute(spmd_collective *collective, const spmd_array *input,
                                    spmd_array **out) {
  return guard(__func__, [&] {
    auto &c = *use(collective, "collective").impl;
    const ArrayHold in(input, "input");
    out_arg(out);
    auto result = c.execute(in.ptr());
    *out = new_handle<spmd_array>(std::move(result));
  });
}

spmd_status spmd_collective_execute_into(spmd_collective *collective, const spmd_array *input,
                                         spmd_array *output) {
  return guard(__func__, [&] {
    auto &c = *use(collective, "collective").impl;
    const ArrayHold in(input, "input");
    const ArrayHold o(output, "output");
    c.execute_into(in.ptr(), *o);
  });
}

}  // extern "C"
