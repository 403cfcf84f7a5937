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
    case KernelKind::ElementwiseChain: return "elementwise_chain";
    case KernelKind::Reduce: return "reduce";
    case KernelKind::SoftmaxRows: return "softmax_rows";
    case KernelKind::Take: return "take";
    case KernelKind::ScatterAdd: return "scatter_add";
    case KernelKind::Gemm: return "gemm";
  }
  return "unknown";
}

namespace {
// What every kernel says: its kind, device, element type and places.
Kernel made(KernelKind kind, int device, spmd_dtype dtype, Place out, Place in0 = {}, Place in1 = {},
            Place in2 = {}) {
  Kernel k;
  k.kind = kind;
  k.device = device;
  k.dtype = dtype;
  k.out = out;
  k.in0 = in0;
  k.in1 = in1;
  k.in2 = in2;
  return k;
}
}  // namespace

Kernel Kernel::elementwise_op(Place out, const Place (&in)[3], ew::Params params, int device) {
  Kernel k = made(KernelKind::Elementwise, device, params.out, out, in[0], in[1], in[2]);
  k.elementwise = std::move(params);
  return k;
}

Kernel Kernel::elementwise_chain(Place out, const Place (&in)[3],
                                 std::shared_ptr<const ew::Chain> chain, spmd_dtype dtype,
                                 size_t count, int device) {
  Kernel k = made(KernelKind::ElementwiseChain, device, dtype, out, in[0], in[1], in[2]);
  k.chain = std::move(chain);
  k.count = count;
  return k;
}

Kernel Kernel::reduction(Place out, Place in, red::Params params, int device) {
  Kernel k = made(KernelKind::Reduce, device, params.out, out, in);
  k.reduce = std::move(params);
  return k;
}

Kernel Kernel::softmax_rows(Place out, Place in, red::SoftmaxParams params, int device) {
  Kernel k = made(KernelKind::SoftmaxRows, device, params.dtype, out, in);
  k.count = static_cast<size_t>(params.rows * params.cols);
  k.softmax = params;
  return k;
}

Kernel Kernel::matmul(Place out, Place a, Place b, gemm::Params params, int device) {
  Kernel k = made(KernelKind::Gemm, device, params.dtype, out, a, b);
  k.gemm = params;
  return k;
}

Kernel Kernel::take_along(Place out, Place a, Place indices, take::Params params, int device) {
  Kernel k = made(KernelKind::Take, device, params.dtype, out, a, indices);
  k.take = params;
  return k;
}

Kernel Kernel::scatter_added(Place out, Place x, Place indices, Place updates,
                             scatter_add::Params params, int device) {
  Kernel k = made(KernelKind::ScatterAdd, device, params.dtype, out, x, indices, updates);
  k.scatter = params;
  return k;
}

Kernel Kernel::fill(Place out, spmd_dtype dtype, size_t count, const void *element) {
  Kernel k = made(KernelKind::Fill, out.device, dtype, out);
  k.count = count;
  k.pattern_bytes = dtype_size(dtype);
  std::memcpy(k.pattern, element, k.pattern_bytes);
  return k;
}

Kernel Kernel::arange(Place out, spmd_dtype dtype, Shape global, Box box, double start,
                      double step) {
  Kernel k = made(KernelKind::Arange, out.device, dtype, out);
  k.global = std::move(global);
  k.box = std::move(box);
  k.start = start;
  k.step = step;
  return k;
}

Kernel Kernel::draw(Place out, const rng::Request &request, Shape global, Box box) {
  Kernel k = made(KernelKind::Random, out.device, request.dtype, out);
  k.random = request;
  k.global = std::move(global);
  k.box = std::move(box);
  return k;
}

Kernel Kernel::convert(Place out, spmd_dtype to, Place in, spmd_dtype from, size_t count) {
  Kernel k = made(KernelKind::Convert, out.device, to, out, in);
  k.in_dtype = from;
  k.count = count;
  return k;
}

Kernel Kernel::scale_by_reciprocal(Place out, Place in, spmd_dtype dtype, size_t count,
                                   double divisor) {
  Kernel k = made(KernelKind::ScaleByReciprocal, out.device, dtype, out, in);
  k.count = count;
  k.scalar = divisor;
  return k;
}

Kernel Kernel::first_difference(Place out, Place a, Place b, spmd_dtype dtype, size_t count,
                                int device) {
  Kernel k = made(KernelKind::FirstDifference, device, dtype, out, a, b);
  k.count = count;
  return k;
}

}  // namespace spmd
