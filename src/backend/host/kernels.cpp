#include "backend/host/kernels.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "base/dtype.hpp"
#include "base/error.hpp"

namespace spmd::host {

namespace {

void fill(void *ptr, size_t count, const unsigned char *pattern, size_t elem_size) {
  auto *p = static_cast<unsigned char *>(ptr);
  bool all_zero = true;
  for (size_t i = 0; i < elem_size; ++i) all_zero = all_zero && pattern[i] == 0;
  if (all_zero || elem_size == 1) {
    std::memset(p, all_zero ? 0 : pattern[0], count * elem_size);
    return;
  }
  for (size_t i = 0; i < count; ++i) std::memcpy(p + i * elem_size, pattern, elem_size);
}

void arange(void *ptr, spmd_dtype dtype, const Shape &global, const Box &box, double start,
            double step) {
  const size_t nd = global.size();
  const size_t es = dtype_size(dtype);
  const int64_t n = box.elements();
  if (n <= 0) return;
  auto *out = static_cast<unsigned char *>(ptr);
  Shape idx(box.start);
  for (int64_t i = 0; i < n; ++i) {
    int64_t flat = 0;
    for (size_t d = 0; d < nd; ++d) flat = flat * global[d] + idx[d];
    store_from_double(dtype, start + static_cast<double>(flat) * step, out + i * es);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < box.stop[d]) break;
      idx[d] = box.start[d];
    }
  }
}

void convert(const void *src, spmd_dtype from, void *dst, spmd_dtype to, size_t count) {
  const size_t fs = dtype_size(from), ts = dtype_size(to);
  for (size_t i = 0; i < count; ++i)
    store_from_double(to, load_as_double(from, static_cast<const char *>(src) + i * fs),
                      static_cast<char *>(dst) + i * ts);
}

// XLA's CPU code runs with subnormals flushed (x86's DAZ and FTZ): a
// subnormal operand is a zero of its sign, and so is a product that is tiny
// after rounding (rounded to T's precision with an unbounded exponent, as
// x86 decides), even where rounding to the subnormal grid would give the
// smallest normal.
template <typename T>
T flush(T x) {
  return std::fabs(x) < std::numeric_limits<T>::min() ? std::copysign(T(0), x) : x;
}
template <typename T>
T multiply_flushed(T x, T c) {
  x = flush(x);
  const T r = x * c;
  if (!(std::fabs(r) <= std::numeric_limits<T>::min())) return r;  // normal, inf or NaN
  // |x| is at most a few smallest normals (c is a reciprocal), so scaling by
  // 2^64 is exact and keeps the product normal: rounded to T's precision.
  const T big = T(18446744073709551616.0);  // 2^64
  const T scaled = (x * big) * c;
  if (std::fabs(scaled) < std::numeric_limits<T>::min() * big) return std::copysign(T(0), r);
  return scaled / big;
}

// x / n as XLA computes pmean's division: its simplifier turns a division by
// a constant into a multiplication by the constant's reciprocal, computed in
// the dtype from n converted to the dtype. f32 and f64 multiply with
// subnormals flushed; bf16 runs in f32 (1 / f32(bf16(n))) and rounds once;
// f16 multiplies by 1 / f16(n) rounded to f16, whose product is exact in
// f32, so it rounds once too. n = 1 leaves the values as they are (XLA
// drops the multiplication by 1).
void scale_by_reciprocal(const void *in, void *out, spmd_dtype dtype, size_t count, double n) {
  const size_t es = dtype_size(dtype);
  if (n == 1) {
    if (in != out && count) std::memmove(out, in, count * es);
    return;
  }
  switch (dtype) {
    case SPMD_F32: {
      const auto *p = static_cast<const float *>(in);
      auto *q = static_cast<float *>(out);
      const float c = 1.0f / static_cast<float>(n);
      for (size_t i = 0; i < count; ++i) q[i] = multiply_flushed(p[i], c);
      return;
    }
    case SPMD_F64: {
      const auto *p = static_cast<const double *>(in);
      auto *q = static_cast<double *>(out);
      const double c = 1.0 / n;
      for (size_t i = 0; i < count; ++i) q[i] = multiply_flushed(p[i], c);
      return;
    }
    case SPMD_BF16: {
      const auto *p = static_cast<const uint16_t *>(in);
      auto *q = static_cast<uint16_t *>(out);
      const float c = 1.0f / bf16_bits_to_f32(f32_to_bf16_bits(static_cast<float>(n)));
      for (size_t i = 0; i < count; ++i)
        q[i] = f32_to_bf16_bits(multiply_flushed(bf16_bits_to_f32(p[i]), c));
      return;
    }
    case SPMD_F16: {
      const auto *p = static_cast<const uint16_t *>(in);
      auto *q = static_cast<uint16_t *>(out);
      const float c = f16_bits_to_f32(
          f32_to_f16_bits(1.0f / f16_bits_to_f32(f32_to_f16_bits(static_cast<float>(n)))));
      for (size_t i = 0; i < count; ++i) q[i] = f32_to_f16_bits(f16_bits_to_f32(p[i]) * c);
      return;
    }
    default:
      fail(SPMD_ERR_INTERNAL, "scale_by_reciprocal kernel: ", dtype_name(dtype),
           " is not a float type");
  }
}

int64_t first_difference(const void *a, const void *b, size_t count, size_t es) {
  const auto *x = static_cast<const unsigned char *>(a);
  const auto *y = static_cast<const unsigned char *>(b);
  if (count == 0 || std::memcmp(x, y, count * es) == 0) return -1;
  size_t k = 0;
  while (std::memcmp(x + k * es, y + k * es, es) == 0) ++k;
  return static_cast<int64_t>(k);
}

}  // namespace

size_t kernel_out_bytes(const Kernel &k) {
  switch (k.kind) {
    case KernelKind::Elementwise:
      return static_cast<size_t>(shape_elements(k.elementwise.shape)) * dtype_size(k.dtype);
    case KernelKind::Reduce:
      return static_cast<size_t>(red::out_elements(k.reduce)) * dtype_size(k.reduce.out);
    case KernelKind::Gemm:
      return static_cast<size_t>(k.gemm.batch * k.gemm.m * k.gemm.n) * dtype_size(k.dtype);
    case KernelKind::Take:
      return static_cast<size_t>(take::out_elements(k.take)) * dtype_size(k.dtype);
    case KernelKind::ScatterAdd:
      return static_cast<size_t>(scatter_add::out_elements(k.scatter)) * dtype_size(k.dtype);
    case KernelKind::Arange:
    case KernelKind::Random:
      return static_cast<size_t>(k.box.elements()) * dtype_size(k.dtype);
    case KernelKind::FirstDifference:
      return sizeof(int64_t);
    default:
      return k.count * dtype_size(k.dtype);
  }
}

size_t kernel_in_bytes(const Kernel &k, int i) {
  switch (k.kind) {
    case KernelKind::Elementwise:
      return i < k.elementwise.nin
                 ? ew::input_elements(k.elementwise, i) * dtype_size(k.elementwise.in[i].dtype)
                 : 0;
    case KernelKind::ElementwiseChain:
      return i < k.chain->nin ? k.count * dtype_size(k.chain->in_dtype[i]) : 0;
    case KernelKind::Reduce:
      return i == 0 ? static_cast<size_t>(shape_elements(k.reduce.shape)) * dtype_size(k.reduce.in) : 0;
    case KernelKind::Take:
      return i == 0   ? static_cast<size_t>(k.take.pre * k.take.len * k.take.post) * dtype_size(k.dtype)
             : i == 1 ? static_cast<size_t>(k.take.count) * dtype_size(k.take.index_dtype)
                      : 0;
    case KernelKind::ScatterAdd: {
      const scatter_add::Params &p = k.scatter;
      return i == 0   ? static_cast<size_t>(scatter_add::out_elements(p)) * dtype_size(k.dtype)
             : i == 1 ? static_cast<size_t>(p.count) * dtype_size(p.index_dtype)
                      : static_cast<size_t>(p.pre * p.count * p.post) * dtype_size(k.dtype);
    }
    case KernelKind::Gemm:
      return i > 1 ? 0
                   : static_cast<size_t>(k.gemm.batch * (i == 0 ? k.gemm.m : k.gemm.n) * k.gemm.k) *
                         dtype_size(k.dtype);
    default:
      break;
  }
  if (i > 1) return 0;
  switch (k.kind) {
    case KernelKind::Convert:
      return k.count * dtype_size(k.in_dtype);
    case KernelKind::ScaleByReciprocal:
    case KernelKind::FirstDifference:
      return k.count * dtype_size(k.dtype);
    case KernelKind::SoftmaxRows:
      return i == 0 ? k.count * dtype_size(k.dtype) : 0;
    default:
      return 0;
  }
}

void run_kernel(const Kernel &k, void *out, const void *const in[3]) {
  const void *in0 = in[0], *in1 = in[1];
  switch (k.kind) {
    case KernelKind::Elementwise:
      return ew::run(k.elementwise, out, in);
    case KernelKind::ElementwiseChain:
      return ew::run_chain(*k.chain, k.count, out, in);
    case KernelKind::Reduce:
      return red::run(k.reduce, out, in0);
    case KernelKind::SoftmaxRows:
      return red::softmax_rows(k.softmax, out, in0);
    case KernelKind::Gemm:
      return gemm::run(k.gemm, out, in0, in1);
    case KernelKind::Take:
      return take::run(k.take, out, in0, in1);
    case KernelKind::ScatterAdd:
      return scatter_add::run(k.scatter, out, in0, in1, in[2]);
    case KernelKind::Fill:
      return fill(out, k.count, k.pattern, k.pattern_bytes);
    case KernelKind::Arange:
      return arange(out, k.dtype, k.global, k.box, k.start, k.step);
    case KernelKind::Random:
      return rng::generate_box(k.random, k.global, k.box, out);
    case KernelKind::Convert:
      return convert(in0, k.in_dtype, out, k.dtype, k.count);
    case KernelKind::ScaleByReciprocal:
      return scale_by_reciprocal(in0, out, k.dtype, k.count, k.scalar);
    case KernelKind::FirstDifference: {
      const int64_t at = first_difference(in0, in1, k.count, dtype_size(k.dtype));
      std::memcpy(out, &at, sizeof at);
      return;
    }
  }
  fail(SPMD_ERR_INTERNAL, "unknown kernel kind ", static_cast<int>(k.kind));
}

}  // namespace spmd::host
