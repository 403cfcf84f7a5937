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

extern "C" {

void spmd_collective_options_init(spmd_collective_options *options) {
  if (options) *options = spmd_collective_options SPMD_COLLECTIVE_OPTIONS_INIT;
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
    const auto o = read_options(options, spmd_collective_options SPMD_COLLECTIVE_OPTIONS_INIT,
                                "options");
    OpSpec op;
    op.axis = o.axis;
    op.concat_axis = o.concat_axis;
    op.tiled = o.tiled != 0;
    switch (raw_enum(kind)) {
      case SPMD_COLLECTIVE_PSUM: op.name = "psum"; break;
      case SPMD_COLLECTIVE_PMEAN: op.name = "pmean"; op.mean = true; break;
      case SPMD_COLLECTIVE_PMAX: op.name = "pmax"; op.op = ReduceOp::Max; break;
      case SPMD_COLLECTIVE_PMIN: op.name = "pmin"; op.op = ReduceOp::Min; break;
      case SPMD_COLLECTIVE_ALL_GATHER: op.name = "all_gather"; op.kind = CollKind::AllGather; break;
      case SPMD_COLLECTIVE_PSUM_SCATTER:
        op.name = "psum_scatter";
        op.kind = CollKind::ReduceScatter;
        break;
      case SPMD_COLLECTIVE_ALL_TO_ALL: op.name = "all_to_all"; op.kind = CollKind::AllToAll; break;
      case SPMD_COLLECTIVE_PPERMUTE:
        op.name = "ppermute";
        op.kind = CollKind::Permute;
        if (o.npairs && o.pairs == nullptr)
          invalid("options->pairs: NULL for ", o.npairs, " pairs");
        for (size_t i = 0; i < o.npairs; ++i) op.pairs.emplace_back(o.pairs[2 * i], o.pairs[2 * i + 1]);
        break;
      default:
        invalid("kind: ", raw_enum(kind), " is not a spmd_collective_kind");
    }
    if (op.kind == CollKind::Permute) {
      // Checked here as well as per device, so a bad plan fails at creation.
      int64_t n = 1;
      const Mesh &m = *s.impl->mesh();
      for (int a : parse_axes(m, axes, "axes")) n *= m.shape()[static_cast<size_t>(a)];
      std::vector<char> src(static_cast<size_t>(n), 0), dst(static_cast<size_t>(n), 0);
      for (const auto &[a, b] : op.pairs) {
        if (a < 0 || b < 0 || a >= n || b >= n)
          invalid("options->pairs: pair (", a, ", ", b, ") names an index outside 0..", n - 1);
        if (src[static_cast<size_t>(a)]++) invalid("options->pairs: index ", a, " is a source twice");
        if (dst[static_cast<size_t>(b)]++)
          invalid("options->pairs: index ", b, " is a destination twice");
      }
    }
    op.axes = parse_axes(*s.impl->mesh(), axes, "axes");
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
    *out_arg(out) = new_handle<spmd_sharding>(c.output_sharding());
  });
}

spmd_status spmd_collective_output_dtype(const spmd_collective *collective, spmd_dtype *out) {
  return guard(__func__, [&] { *out_arg(out) = use(collective, "collective").impl->output_dtype(); });
}

spmd_status spmd_collective_output_ndim(const spmd_collective *collective, size_t *out) {
  return guard(__func__, [&] {
    *out_arg(out) = use(collective, "collective").impl->output_shape().size();
  });
}

spmd_status spmd_collective_output_shape(const spmd_collective *collective, int64_t *shape) {
  return guard(__func__, [&] {
    const auto &c = *use(collective, "collective").impl;
    out_arg(shape, "shape");
    std::copy(c.output_shape().begin(), c.output_shape().end(), shape);
  });
}

spmd_status spmd_collective_execute(spmd_collective *collective, const spmd_array *input,
                                    spmd_array **out) {
  return guard(__func__, [&] {
    auto &c = *use(collective, "collective").impl;
    const auto &in = use(input, "input");
    out_arg(out);
    auto result = c.execute(in.impl);
    *out = new_handle<spmd_array>(std::move(result));
  });
}

spmd_status spmd_collective_execute_into(spmd_collective *collective, const spmd_array *input,
                                         spmd_array *output) {
  return guard(__func__, [&] {
    auto &c = *use(collective, "collective").impl;
    const auto &in = use(input, "input");
    auto &o = use(output, "output");
    c.execute_into(in.impl, *o.impl);
  });
}

}  // extern "C"
