#include "backend/kernel.hpp"

#include <cstring>

#include "base/dtype.hpp"

namespace spmd {

const char *kernel_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::Fill: return "fill";
    case KernelKind::Arange: return "arange";
    case KernelKind::Random: return "random";
    case KernelKind::Convert: return "convert";
    case KernelKind::ScaleByReciprocal: return "scale_by_reciprocal";
    case KernelKind::FirstDifference: return "first_difference";
    case KernelKind::Elementwise: return "elementwise";
    case KernelKind::Reduce: return "reduce";
    case KernelKind::Take: return "take";
    case KernelKind::ScatterAdd: return "scatter_add";
    case KernelKind::Gemm: return "gemm";
  }
  return "unknown";
}

Kernel Kernel::elementwise_op(Place out, const Place (&in)[3], ew::Params params, int device) {
  Kernel k;
  k.kind = KernelKind::Elementwise;
  k.device = device;
  k.dtype = params.out;
  k.out = out;
  k.in0 = in[0];
  k.in1 = in[1];
  k.in2 = in[2];
  k.elementwise = std::move(params);
  return k;
}

Kernel Kernel::reduction(Place out, Place in, red::Params params, int device) {
  Kernel k;
  k.kind = KernelKind::Reduce;
  k.device = device;
  k.dtype = params.out;
  k.out = out;
  k.in0 = in;
  k.reduce = std::move(params);
  return k;
}

Kernel Kernel::matmul(Place out, Place a, Place b, gemm::Params params, int device) {
  Kernel k;
  k.kind = KernelKind::Gemm;
  k.device = device;
  k.dtype = params.dtype;
  k.out = out;
  k.in0 = a;
  k.in1 = b;
  k.gemm = params;
  return k;
}

Kernel Kernel::take_along(Place out, Place a, Place indices, take::Params params, int device) {
  Kernel k;
  k.kind = KernelKind::Take;
  k.device = device;
  k.dtype = params.dtype;
  k.out = out;
  k.in0 = a;
  k.in1 = indices;
  k.take = params;
  return k;
}

Kernel Kernel::scatter_added(Place out, Place x, Place indices, Place updates,
                             scatter_add::Params params, int device) {
  Kernel k;
  k.kind = KernelKind::ScatterAdd;
  k.device = device;
  k.dtype = params.dtype;
  k.out = out;
  k.in0 = x;
  k.in1 = indices;
  k.in2 = updates;
  k.scatter = params;
  return k;
}

Kernel Kernel::fill(Place out, spmd_dtype dtype, size_t count, const void *element) {
  Kernel k;
  k.kind = KernelKind::Fill;
  k.device = out.device;
  k.dtype = dtype;
  k.out = out;
  k.count = count;
  k.pattern_bytes = dtype_size(dtype);
  std::memcpy(k.pattern, element, k.pattern_bytes);
  return k;
}

Kernel Kernel::arange(Place out, spmd_dtype dtype, Shape global, Box box, double start,
                      double step) {
  Kernel k;
  k.kind = KernelKind::Arange;
  k.device = out.device;
  k.dtype = dtype;
  k.out = out;
  k.global = std::move(global);
  k.box = std::move(box);
  k.start = start;
  k.step = step;
  return k;
}

Kernel Kernel::draw(Place out, const rng::Request &request, Shape global, Box box) {
  Kernel k;
  k.kind = KernelKind::Random;
  k.device = out.device;
  k.dtype = request.dtype;
  k.out = out;
  k.random = request;
  k.global = std::move(global);
  k.box = std::move(box);
  return k;
}

Kernel Kernel::convert(Place out, spmd_dtype to, Place in, spmd_dtype from, size_t count) {
  Kernel k;
  k.kind = KernelKind::Convert;
  k.device = out.device;
  k.dtype = to;
  k.in_dtype = from;
  k.out = out;
  k.in0 = in;
  k.count = count;
  return k;
}

Kernel Kernel::scale_by_reciprocal(Place out, Place in, spmd_dtype dtype, size_t count,
                                   double divisor) {
  Kernel k;
  k.kind = KernelKind::ScaleByReciprocal;
  k.device = out.device;
  k.dtype = dtype;
  k.out = out;
  k.in0 = in;
  k.count = count;
  k.scalar = divisor;
  return k;
}

Kernel Kernel::first_difference(Place out, Place a, Place b, spmd_dtype dtype, size_t count,
                                int device) {
  Kernel k;
  k.kind = KernelKind::FirstDifference;
  k.device = device;
  k.dtype = dtype;
  k.out = out;
  k.in0 = a;
  k.in1 = b;
  k.count = count;
  return k;
}

}  // namespace spmd
