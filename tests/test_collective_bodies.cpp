// The CUDA platform's collectives, checked on the host: the element bodies
// its reduction kernels run (kernels/device/collective_reduce.hpp) against
// host::reduce_buffers, and its native collectives' steps
// (backend/cuda/collective_steps.hpp), run here by the host, against
// host::run_phase. Both must agree bit for bit: the CUDA platform promises
// the CPU platform's results. Seeded; a failure names its case.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cuda/collective_steps.hpp"
#include "backend/host/collective_phases.hpp"
#include "backend/host/copy.hpp"
#include "backend/host/reduce.hpp"
#include "base/dtype.hpp"
#include "kernels/device/collective_reduce.hpp"

// Last: cmocka's macros (fail, ...) would clash with the C++ headers.
extern "C" {
#include <cmocka.h>
}

using namespace spmd;

namespace {

struct Rng {
  uint64_t s;
  uint64_t next() {  // splitmix64
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
};

const spmd_dtype kDtypes[] = {SPMD_F32, SPMD_F64, SPMD_F16, SPMD_BF16, SPMD_I32, SPMD_I64,
                              SPMD_U8,  SPMD_BOOL, SPMD_I8,  SPMD_I16,  SPMD_U16, SPMD_U32};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min};
const char *op_name(ReduceOp op) {
  return op == ReduceOp::Sum ? "sum" : op == ReduceOp::Max ? "max" : "min";
}

// Values that find the edges: signed zeros, infinities, NaNs with payloads
// and signs (quiet and signalling), subnormals, the largest values, integer
// extremes; otherwise small integers (sums that round and overflow), random
// normal numbers and random bits.
const uint32_t kF32Special[] = {
    0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7fc12345, 0xffd00001,
    0x7f800001, 0xff812345, 0x00000001, 0x80000001, 0x007fffff, 0x807fffff, 0x00800000, 0x80800000,
    0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000, 0x00800001, 0x80ffffff};
const uint64_t kF64Special[] = {0x0ull,
                                0x8000000000000000ull,
                                0x7ff0000000000000ull,
                                0xfff0000000000000ull,
                                0x7ff8000000000000ull,
                                0xfff8000000000000ull,
                                0x7ff8000000012345ull,
                                0x7ff0000000000001ull,
                                0xfff0000000abcdefull,
                                0x1ull,
                                0x8000000000000001ull,
                                0x000fffffffffffffull,
                                0x0010000000000000ull,
                                0x8010000000000000ull,
                                0x7fefffffffffffffull,
                                0xffefffffffffffffull,
                                0x3ff0000000000000ull,
                                0xbff0000000000000ull};
const uint16_t kF16Special[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7e55,
                                0x7c01, 0xfd23, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0400,
                                0x8400, 0x7bff, 0xfbff, 0x3c00, 0xbc00, 0x7bfe, 0x0200};
const uint16_t kBf16Special[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7fd5,
                                 0x7f81, 0xff85, 0x0001, 0x8001, 0x007f, 0x807f, 0x0080,
                                 0x8080, 0x7f7f, 0xff7f, 0x3f80, 0xbf80, 0x7f7e};

template <typename T, size_t N>
T pick(Rng &rng, const T (&list)[N]) {
  return list[rng.below(N)];
}

void random_value(spmd_dtype dtype, Rng &rng, void *dst) {
  const int64_t kind = rng.below(10);  // 0-2 special, 3-6 small integer, 7-8 normal, 9 bits
  const double small = static_cast<double>(rng.below(17) - 8) * (rng.below(2) ? 1.0 : 0.375);
  const double normal =
      std::ldexp(static_cast<double>(rng.next() >> 11), -53 + int(rng.below(40)) - 20) *
      (rng.below(2) ? 1 : -1);
  switch (dtype) {
    case SPMD_F32: {
      uint32_t b = kind < 3 ? pick(rng, kF32Special) : static_cast<uint32_t>(rng.next());
      if (kind >= 3 && kind < 9) {
        const float f = static_cast<float>(kind < 7 ? small : normal);
        std::memcpy(&b, &f, 4);
      }
      std::memcpy(dst, &b, 4);
      return;
    }
    case SPMD_F64: {
      uint64_t b = kind < 3 ? pick(rng, kF64Special) : rng.next();
      if (kind >= 3 && kind < 9) {
        const double f = kind < 7 ? small : normal * 1e10;
        std::memcpy(&b, &f, 8);
      }
      std::memcpy(dst, &b, 8);
      return;
    }
    case SPMD_F16:
    case SPMD_BF16: {
      const bool bf = dtype == SPMD_BF16;
      uint16_t b = kind < 3 ? (bf ? pick(rng, kBf16Special) : pick(rng, kF16Special))
                            : static_cast<uint16_t>(rng.next());
      if (kind >= 3 && kind < 9) {
        const float f = static_cast<float>(kind < 7 ? small : normal * 1e3);
        b = bf ? f32_to_bf16_bits(f) : f32_to_f16_bits(f);
      }
      std::memcpy(dst, &b, 2);
      return;
    }
    case SPMD_I32: {
      const int32_t special[] = {INT32_MAX, INT32_MIN, -1, 0, 1, INT32_MAX - 1};
      int32_t v = kind < 3   ? pick(rng, special)
                  : kind < 7 ? static_cast<int32_t>(small)
                             : static_cast<int32_t>(rng.next());
      std::memcpy(dst, &v, 4);
      return;
    }
    case SPMD_I64: {
      const int64_t special[] = {INT64_MAX, INT64_MIN, -1, 0, 1, INT64_MIN + 1};
      int64_t v = kind < 3   ? pick(rng, special)
                  : kind < 7 ? static_cast<int64_t>(small)
                             : static_cast<int64_t>(rng.next());
      std::memcpy(dst, &v, 8);
      return;
    }
    case SPMD_U8: {
      const uint8_t special[] = {0, 255, 128, 1, 254};
      const uint8_t v = kind < 3 ? pick(rng, special) : static_cast<uint8_t>(rng.next());
      std::memcpy(dst, &v, 1);
      return;
    }
    case SPMD_I8: {
      const int8_t special[] = {INT8_MAX, INT8_MIN, -1, 0, 1, INT8_MIN + 1};
      const int8_t v = kind < 3   ? pick(rng, special)
                       : kind < 7 ? static_cast<int8_t>(small)
                                  : static_cast<int8_t>(rng.next());
      std::memcpy(dst, &v, 1);
      return;
    }
    case SPMD_I16: {
      const int16_t special[] = {INT16_MAX, INT16_MIN, -1, 0, 1, INT16_MIN + 1};
      const int16_t v = kind < 3   ? pick(rng, special)
                        : kind < 7 ? static_cast<int16_t>(small)
                                   : static_cast<int16_t>(rng.next());
      std::memcpy(dst, &v, 2);
      return;
    }
    case SPMD_U16: {
      const uint16_t special[] = {0, UINT16_MAX, 0x8000, 1, UINT16_MAX - 1};
      const uint16_t v = kind < 3 ? pick(rng, special) : static_cast<uint16_t>(rng.next());
      std::memcpy(dst, &v, 2);
      return;
    }
    case SPMD_U32: {
      const uint32_t special[] = {0, UINT32_MAX, 0x80000000u, 1, UINT32_MAX - 1};
      const uint32_t v = kind < 3 ? pick(rng, special) : static_cast<uint32_t>(rng.next());
      std::memcpy(dst, &v, 4);
      return;
    }
    case SPMD_BOOL: {
      const uint8_t v = static_cast<uint8_t>(rng.below(2));
      std::memcpy(dst, &v, 1);
      return;
    }
    default: fail_msg("no values of dtype %d", static_cast<int>(dtype));
  }
}

std::vector<unsigned char> random_buffer(spmd_dtype dtype, size_t count, Rng &rng) {
  const size_t es = dtype_size(dtype);
  std::vector<unsigned char> b(count * es);
  for (size_t i = 0; i < count; ++i) random_value(dtype, rng, b.data() + i * es);
  return b;
}

bool float_dtype(spmd_dtype dtype) {
  return dtype == SPMD_F32 || dtype == SPMD_F64 || dtype == SPMD_F16 || dtype == SPMD_BF16;
}

bool both_nan(spmd_dtype dtype, const unsigned char *a, const unsigned char *b) {
  return float_dtype(dtype) && std::isnan(load_as_double(dtype, a)) &&
         std::isnan(load_as_double(dtype, b));
}

// Equal bits. A float sum's NaN is exact where at most one input could make
// one: with two NaNs (or a NaN and an infinity, or infinities of both signs)
// the CPU platform's result depends on the operand order its compiler chose
// for each loop (x86 returns the first operand's NaN), so only NaN-ness is
// compared there (`loose`). The bodies make NaNs as x86-64 does; elsewhere
// the CPU platform's sums make the machine's own NaNs, so every float sum
// is loose.
bool same_element(spmd_dtype dtype, ReduceOp op, const unsigned char *a, const unsigned char *b,
                  bool loose) {
  if (std::memcmp(a, b, dtype_size(dtype)) == 0) return true;
#if !defined(__x86_64__)
  loose = true;
#endif
  return loose && op == ReduceOp::Sum && both_nan(dtype, a, b);
}

std::string hex(const unsigned char *p, size_t es) {
  std::string s = "0x";
  char buf[4];
  for (size_t i = es; i-- > 0;) {
    std::snprintf(buf, sizeof buf, "%02x", p[i]);
    s += buf;
  }
  return s;
}

// The bodies over n sources, element by element as a kernel thread runs
// them; with `split` in [1, n), the list is cut there: the partial result
// goes through the element type and the rest resumes from it, as a second
// launch over the output does.
template <typename R>
void body_reduce(void *out, const void *const *srcs, size_t n, size_t count, size_t split) {
  using T = typename R::Elem;
  for (size_t i = 0; i < count; ++i) {
    auto load = [&](size_t r) {
      T v;
      std::memcpy(&v, static_cast<const char *>(srcs[r]) + i * sizeof(T), sizeof v);
      return v;
    };
    auto acc = R::start(load(0));
    for (size_t r = 1; r < n; ++r) {
      if (r == split) acc = R::resume(R::finish(acc));
      acc = R::step(acc, load(r));
    }
    const T v = R::finish(acc);
    std::memcpy(static_cast<char *>(out) + i * sizeof(T), &v, sizeof v);
  }
}

void check_against_reduce_buffers(spmd_dtype dtype, ReduceOp op, size_t n, size_t count, bool split,
                                  Rng &rng) {
  const size_t es = dtype_size(dtype);
  std::vector<std::vector<unsigned char>> in(n);
  std::vector<const void *> srcs(n);
  for (size_t r = 0; r < n; ++r) {
    in[r] = random_buffer(dtype, count, rng);
    srcs[r] = in[r].data();
  }
  std::vector<unsigned char> want(count * es), got(count * es);
  host::reduce_buffers(dtype, op, want.data(), srcs.data(), n, count);
  bool resumable = true;
  const size_t cut =
      split && n > 1 ? 1 + static_cast<size_t>(rng.below(static_cast<int64_t>(n - 1))) : 0;
  const bool known = dev::collective::visit_reduction(dtype, op, [&](auto reduction) {
    using R = decltype(reduction);
    resumable = R::kResumable;
    body_reduce<R>(got.data(), srcs.data(), n, count, resumable ? cut : 0);
  });
  assert_true(known);
  if (split && !resumable) return;  // checked whole by the other case
  for (size_t i = 0; i < count; ++i) {
    int nonfinite = 0;
    for (size_t r = 0; r < n; ++r)
      if (float_dtype(dtype) && !std::isfinite(load_as_double(dtype, in[r].data() + i * es)))
        ++nonfinite;
    if (same_element(dtype, op, want.data() + i * es, got.data() + i * es, nonfinite > 1)) continue;
    std::string inputs;
    for (size_t r = 0; r < n; ++r) inputs += " " + hex(in[r].data() + i * es, es);
    fail_msg("%s %s of %zu members%s, element %zu: reduce_buffers gives %s, the body %s; inputs%s",
             dtype_name(dtype), op_name(op), n, cut ? " (split)" : "", i,
             hex(want.data() + i * es, es).c_str(), hex(got.data() + i * es, es).c_str(),
             inputs.c_str());
  }
}

}  // namespace

static void half_conversions_match_base_dtype(void **) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float a = f16_bits_to_f32(static_cast<uint16_t>(h)),
                b = dev::collective::widen_f16(static_cast<uint16_t>(h));
    const float c = bf16_bits_to_f32(static_cast<uint16_t>(h)),
                d = dev::collective::widen_bf16(static_cast<uint16_t>(h));
    if (std::memcmp(&a, &b, 4) != 0) fail_msg("f16 0x%04x widens differently", h);
    if (std::memcmp(&c, &d, 4) != 0) fail_msg("bf16 0x%04x widens differently", h);
  }
  // Every f32 exponent, with mantissas at and around the rounding points.
  Rng rng{7};
  auto check = [](uint32_t x) {
    float f;
    std::memcpy(&f, &x, 4);
    if (f32_to_f16_bits(f) != dev::collective::narrow_f16(f))
      fail_msg("f32 0x%08x narrows to f16 0x%04x, the body gives 0x%04x", x, f32_to_f16_bits(f),
               dev::collective::narrow_f16(f));
    if (f32_to_bf16_bits(f) != dev::collective::narrow_bf16(f))
      fail_msg("f32 0x%08x narrows to bf16 0x%04x, the body gives 0x%04x", x, f32_to_bf16_bits(f),
               dev::collective::narrow_bf16(f));
  };
  for (uint32_t sign = 0; sign < 2; ++sign)
    for (uint32_t e = 0; e < 256; ++e) {
      const uint32_t base = (sign << 31) | (e << 23);
      for (uint32_t m : {0u, 1u, 0xfffu, 0x1000u, 0x1001u, 0x3000u, 0x7fffu, 0x8000u, 0x8001u,
                         0x18000u, 0x400000u, 0x7fffffu, 0x7ff000u, 0x7fefffu})
        check(base | m);
      for (int i = 0; i < 2000; ++i) check(base | static_cast<uint32_t>(rng.next() & 0x7fffffu));
    }
}

static void bodies_match_reduce_buffers_bit_for_bit(void **) {
  Rng rng{1};
  for (spmd_dtype dtype : kDtypes)
    for (ReduceOp op : kOps) {
      if (dtype == SPMD_BOOL && op == ReduceOp::Sum) continue;  // never asked for
      for (size_t n : {1, 2, 3, 5, 8, 17})
        check_against_reduce_buffers(dtype, op, n, 3000, false, rng);
    }
}

static void bodies_resume_from_a_partial_result_bit_for_bit(void **) {
  Rng rng{2};
  for (spmd_dtype dtype : kDtypes)
    for (ReduceOp op : kOps) {
      if (dtype == SPMD_BOOL && op == ReduceOp::Sum) continue;
      for (size_t n : {2, 3, 6, 9})
        for (int rep = 0; rep < 4; ++rep)
          check_against_reduce_buffers(dtype, op, n, 1500, true, rng);
    }
}

namespace {

// The native steps, run by the host: reductions by the bodies, copies by
// host::strided_copy.
class HostSink final : public cuda::StepSink {
 public:
  void reduce(spmd_dtype dtype, ReduceOp op, const void *const *srcs, size_t n, void *out,
              int64_t count, int64_t row, int64_t src_stride) override {
    assert_true(count > 0 && row > 0 && count % row == 0);
    const bool known = dev::collective::visit_reduction(dtype, op, [&](auto reduction) {
      using R = decltype(reduction);
      using T = typename R::Elem;
      std::vector<const void *> s(n);
      for (int64_t o = 0; o < count / row; ++o) {
        for (size_t r = 0; r < n; ++r) s[r] = static_cast<const T *>(srcs[r]) + o * src_stride;
        body_reduce<R>(static_cast<T *>(out) + o * row, s.data(), n, static_cast<size_t>(row), 0);
      }
    });
    assert_true(known);
  }
  void copy(const Shape &ext, const void *src, const Shape &src_strides, void *dst,
            const Shape &dst_strides, size_t elem_size) override {
    for (int64_t e : ext) assert_true(e > 0);
    host::strided_copy(ext, static_cast<const char *>(src), src_strides, static_cast<char *>(dst),
                       dst_strides, elem_size);
  }
  void zero(void *dst, size_t bytes) override {
    assert_true(bytes > 0);
    std::memset(dst, 0, bytes);
  }
};

Shape random_shape(Rng &rng, size_t rank, int64_t max_dim) {
  Shape s(rank);
  for (auto &d : s) d = rng.below(max_dim + 1);
  return s;
}

int64_t chunk_len(int64_t dim, size_t n, size_t r) {
  const int64_t chunk = (dim + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
  const int64_t start = std::min<int64_t>(dim, static_cast<int64_t>(r) * chunk);
  return std::min<int64_t>(dim, start + chunk) - start;
}

Shape with_dim(Shape s, size_t axis, int64_t v) {
  s[axis] = v;
  return s;
}
Shape erased(Shape s, size_t axis) {
  s.erase(s.begin() + static_cast<ptrdiff_t>(axis));
  return s;
}
Shape inserted(Shape s, size_t axis, int64_t v) {
  s.insert(s.begin() + static_cast<ptrdiff_t>(axis), v);
  return s;
}

// One collective over n members with random shapes of its kind; runs it
// with host::run_phase and with the steps, and compares every output
// buffer whole (what neither writes keeps its fill).
struct Case {
  std::vector<CollectiveCall> calls;
  std::vector<Shape> in_shapes;
  std::string what;
};

Case random_case(Transport kind, Rng &rng) {
  Case c;
  const size_t n = 1 + static_cast<size_t>(rng.below(6));
  const spmd_dtype dtype = kDtypes[rng.below(8)];
  ReduceOp op = kOps[rng.below(3)];
  if (dtype == SPMD_BOOL && op == ReduceOp::Sum) op = ReduceOp::Max;
  const size_t rank = 1 + static_cast<size_t>(rng.below(3));
  const bool tiled = rng.below(2) == 0;
  const size_t axis = static_cast<size_t>(rng.below(static_cast<int64_t>(rank)));
  c.calls.resize(n);
  c.in_shapes.resize(n);
  Shape shape = random_shape(rng, rank, 5);
  size_t concat = 0;
  switch (kind) {
    case Transport::AllReduce:
      if (rng.below(3) == 0) shape = {rng.below(1500)};  // long enough for chunks
      for (size_t r = 0; r < n; ++r) {
        c.in_shapes[r] = shape;
        c.calls[r].out_shape = shape;
      }
      break;
    case Transport::AllGather: {
      const int64_t global = rng.below(11);
      for (size_t r = 0; r < n; ++r) {
        c.in_shapes[r] = tiled ? with_dim(shape, axis, chunk_len(global, n, r)) : shape;
        c.calls[r].out_shape =
            tiled ? with_dim(shape, axis, global) : inserted(shape, axis, static_cast<int64_t>(n));
      }
      break;
    }
    case Transport::ReduceScatter: {
      if (!tiled) shape[axis] = static_cast<int64_t>(n);
      for (size_t r = 0; r < n; ++r) {
        c.in_shapes[r] = shape;
        c.calls[r].out_shape =
            tiled ? with_dim(shape, axis, chunk_len(shape[axis], n, r)) : erased(shape, axis);
      }
      break;
    }
    case Transport::AllToAll: {
      concat = static_cast<size_t>(rng.below(static_cast<int64_t>(tiled ? rank : rank)));
      if (!tiled) shape[axis] = static_cast<int64_t>(n);
      for (size_t r = 0; r < n; ++r) {
        c.in_shapes[r] = shape;
        if (tiled) {
          Shape out = with_dim(shape, axis, chunk_len(shape[axis], n, r));
          out[concat] *= static_cast<int64_t>(n);
          c.calls[r].out_shape = out;
        } else {
          c.calls[r].out_shape = inserted(erased(shape, axis), concat, static_cast<int64_t>(n));
        }
      }
      break;
    }
    case Transport::Permute:
      for (size_t r = 0; r < n; ++r) {
        c.in_shapes[r] = shape;
        c.calls[r].out_shape = shape;
        c.calls[r].source = rng.below(static_cast<int64_t>(n) + 1) - 1;
      }
      break;
  }
  for (auto &call : c.calls) {
    call.kind = kind;
    call.op = op;
    call.dtype = dtype;
    call.axis = static_cast<int64_t>(axis);
    call.concat_axis = static_cast<int64_t>(concat);
    call.tiled = tiled;
  }
  c.what = std::string(dtype_name(dtype)) + " " + op_name(op) + " over " + std::to_string(n) +
           " members, input " + shape_to_string(shape) + ", axis " + std::to_string(axis) +
           ", concat axis " + std::to_string(concat) + (tiled ? ", tiled" : ", untiled");
  return c;
}

void run_case(const Case &c, bool reduce_whole, Rng &rng, const char *kind_name) {
  const size_t n = c.calls.size();
  const spmd_dtype dtype = c.calls[0].dtype;
  const size_t es = dtype_size(dtype);
  std::vector<std::vector<unsigned char>> in(n), want(n), got(n);
  for (size_t r = 0; r < n; ++r) {
    in[r] = random_buffer(dtype, static_cast<size_t>(shape_elements(c.in_shapes[r])), rng);
    want[r].assign(static_cast<size_t>(shape_elements(c.calls[r].out_shape)) * es, 0xa5);
    got[r] = want[r];
  }
  std::vector<host::HostSlot> host_slots(n);
  std::vector<cuda::MemberSlot> step_slots(n);
  for (size_t r = 0; r < n; ++r) {
    host_slots[r] = {in[r].data(), &c.in_shapes[r], want[r].data()};
    step_slots[r] = {in[r].data(), &c.in_shapes[r], got[r].data()};
  }
  const int phases = host::phase_count(c.calls[0], reduce_whole);
  assert_int_equal(phases, cuda::native_step_phases(c.calls[0], reduce_whole));
  HostSink sink;
  for (int k = 0; k < phases; ++k)
    for (size_t r = 0; r < n; ++r) {
      host::run_phase(c.calls[r], want[r].data(), host::HostGroup(host_slots, r), k, reduce_whole);
      cuda::plan_native_phase(c.calls[r], got[r].data(), step_slots, r, k, reduce_whole, sink);
    }
  for (size_t r = 0; r < n; ++r)
    for (size_t i = 0; i < want[r].size(); i += es)
      // The elements' rules are the bodies' test; here any NaN of a sum is
      // taken for any other.
      if (!same_element(dtype, c.calls[0].op, want[r].data() + i, got[r].data() + i, true))
        fail_msg("%s (%s%s): member %zu, element %zu: host %s, steps %s", kind_name, c.what.c_str(),
                 reduce_whole ? "" : ", by chunks", r, i / es, hex(want[r].data() + i, es).c_str(),
                 hex(got[r].data() + i, es).c_str());
}

}  // namespace

static void native_steps_match_the_host_phases(void **) {
  const struct {
    Transport kind;
    const char *name;
  } kinds[] = {{Transport::AllReduce, "all-reduce"},
               {Transport::AllGather, "all-gather"},
               {Transport::ReduceScatter, "reduce-scatter"},
               {Transport::AllToAll, "all-to-all"},
               {Transport::Permute, "permute"}};
  Rng rng{3};
  for (const auto &k : kinds)
    for (int i = 0; i < 400; ++i) {
      const Case c = random_case(k.kind, rng);
      run_case(c, true, rng, k.name);
      if (k.kind == Transport::AllReduce) run_case(c, false, rng, k.name);
    }
}

static void all_to_all_pieces_tile_the_output(void **) {
  // Every element of a receiver's output is written by exactly one piece,
  // and a sender's pieces cover its input once: the NCCL path sends and
  // receives these pieces separately, so both sides must agree.
  Rng rng{4};
  for (int i = 0; i < 300; ++i) {
    const Case c = random_case(Transport::AllToAll, rng);
    const size_t n = c.calls.size();
    for (size_t me = 0; me < n; ++me) {
      std::vector<int> hits(static_cast<size_t>(shape_elements(c.calls[me].out_shape)), 0);
      cuda::for_each_all_to_all_receive(
          c.calls[me], n, me, [&](size_t j) -> const Shape & { return c.in_shapes[j]; },
          [&](size_t j, const cuda::AllToAllPiece &p) {
            const cuda::AllToAllPiece sent =
                cuda::all_to_all_send(c.calls[j], c.in_shapes[j], n, me);
            assert_true(sent.ext == p.ext);
            if (shape_elements(p.ext) == 0) return;
            std::vector<int64_t> idx(p.ext.size(), 0);
            for (;;) {
              int64_t off = p.to.offset;
              for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * p.to.strides[d];
              ++hits[static_cast<size_t>(off)];
              size_t d = idx.size();
              while (d > 0 && ++idx[d - 1] == p.ext[d - 1]) idx[--d] = 0;
              if (d == 0) break;
            }
          });
      for (size_t e = 0; e < hits.size(); ++e)
        if (hits[e] != 1)
          fail_msg("all-to-all (%s): member %zu's element %zu written %d times", c.what.c_str(), me,
                   e, hits[e]);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(half_conversions_match_base_dtype),
      cmocka_unit_test(bodies_match_reduce_buffers_bit_for_bit),
      cmocka_unit_test(bodies_resume_from_a_partial_result_bit_for_bit),
      cmocka_unit_test(native_steps_match_the_host_phases),
      cmocka_unit_test(all_to_all_pieces_tile_the_output),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
