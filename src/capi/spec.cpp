#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "spmd/spec.h"

using namespace spmd;
using namespace spmd::capi;

namespace {
size_t checked_dim(const PartitionSpec &s, size_t dim) {
  if (dim >= s.ndim())
    fail(SPMD_ERR_OUT_OF_RANGE, "dim: ", dim, " is past the spec's ", s.ndim(), " dimensions");
  return dim;
}
}  // namespace

extern "C" {

spmd_status spmd_spec_parse(const char *text, spmd_spec **out) {
  return guard(__func__, [&] {
    out_arg(out);
    if (text == nullptr) invalid("text: NULL");
    *out = new_handle<spmd_spec>(PartitionSpec::parse(text));
  });
}

spmd_status spmd_spec_create(spmd_spec **out) {
  return guard(__func__, [&] {
    produce(out, [&] { return new_handle<spmd_spec>(PartitionSpec()); });
  });
}

spmd_status spmd_spec_append(spmd_spec *spec, const char *const *axes, size_t naxes) {
  return guard(__func__, [&] {
    auto &s = use(spec, "spec");
    if (naxes > 0 && axes == nullptr) invalid("axes: NULL with naxes ", naxes);
    PartitionSpec::Dim dim;
    for (size_t i = 0; i < naxes; ++i) {
      if (axes[i] == nullptr) invalid("axes[", i, "]: NULL");
      dim.emplace_back(axes[i]);
    }
    s.impl.append(std::move(dim));
  });
}

void spmd_spec_destroy(spmd_spec *spec) { destroy_handle(spec); }

spmd_status spmd_spec_ndim(const spmd_spec *spec, size_t *out) {
  return guard(__func__, [&] { produce(out, [&] { return use(spec, "spec").impl.ndim(); }); });
}

spmd_status spmd_spec_dim_size(const spmd_spec *spec, size_t dim, size_t *out) {
  return guard(__func__, [&] {
    const auto &s = use(spec, "spec").impl;
    out_arg(out);
    *out = s.dims()[checked_dim(s, dim)].size();
  });
}

spmd_status spmd_spec_dim_axis(const spmd_spec *spec, size_t dim, size_t i, const char **out) {
  return guard(__func__, [&] {
    const auto &s = use(spec, "spec").impl;
    out_arg(out);
    const auto &axes = s.dims()[checked_dim(s, dim)];
    if (i >= axes.size())
      fail(SPMD_ERR_OUT_OF_RANGE, "i: dimension ", dim, " has ", axes.size(), " axes");
    *out = axes[i].c_str();
  });
}

spmd_status spmd_spec_equal(const spmd_spec *a, const spmd_spec *b, int *out) {
  return guard(__func__, [&] {
    const auto &sa = use(a, "a").impl;
    const auto &sb = use(b, "b").impl;
    produce(out, [&] { return sa.same_layout(sb); });
  });
}

spmd_status spmd_spec_to_string(const spmd_spec *spec, char **out) {
  return guard(__func__, [&] {
    produce(out, [&] { return to_c_string(use(spec, "spec").impl.to_string()); });
  });
}

}  // extern "C"
