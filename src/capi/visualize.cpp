#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "core/visualize.hpp"
#include "spmd/visualize.h"

using namespace spmd;
using namespace spmd::capi;

namespace {
PictureOptions picture_options(const spmd_visualize_options *given) {
  const auto o = read_options(given, spmd_visualize_options SPMD_VISUALIZE_OPTIONS_INIT, "options");
  PictureOptions p;
  p.ascii = o.ascii != 0;
  if (o.max_width < 0) invalid("options->max_width: ", o.max_width, " is negative");
  if (o.min_width < 0) invalid("options->min_width: ", o.min_width, " is negative");
  if (o.max_width > kMaxPictureWidth)
    invalid("options->max_width: ", o.max_width, " is wider than the ", kMaxPictureWidth,
            " characters a picture may take");
  if (o.min_width > kMaxPictureWidth)
    invalid("options->min_width: ", o.min_width, " is wider than the ", kMaxPictureWidth,
            " characters a picture may take");
  if (!(o.scale >= 0)) invalid("options->scale: ", o.scale, " is not >= 0");
  if (o.scale > kMaxPictureScale)
    invalid("options->scale: ", o.scale, " is larger than ", kMaxPictureScale,
            ", the largest picture scale");
  if (o.max_width) p.max_width = o.max_width;
  if (o.min_width) p.min_width = o.min_width;
  if (o.scale > 0) p.scale = o.scale;
  return p;
}
}  // namespace

extern "C" {

spmd_status spmd_visualize_options_init(spmd_visualize_options *options, size_t size) {
  return guard(__func__, [&] {
    init_struct(options, size, spmd_visualize_options SPMD_VISUALIZE_OPTIONS_INIT, "options");
  });
}

spmd_status spmd_sharding_visualize(const spmd_sharding *sharding, size_t ndim,
                                    const int64_t *shape, const spmd_visualize_options *options,
                                    char **out) {
  return guard(__func__, [&] {
    const auto &s = *use(sharding, "sharding").impl;
    out_arg(out);
    const Shape global = checked_shape("shape", ndim, shape);
    *out = to_c_string(visualize_sharding(s, global, picture_options(options)));
  });
}

spmd_status spmd_array_visualize(const spmd_array *array, const spmd_visualize_options *options,
                                 char **out) {
  return guard(__func__, [&] {
    const ArrayHold a(array, "array", Abstract::Allowed);
    out_arg(out);
    *out = to_c_string(visualize_sharding(*a->sharding(), a->shape(), picture_options(options)));
  });
}

}  // extern "C"
