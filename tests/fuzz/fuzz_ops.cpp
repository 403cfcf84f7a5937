// The global ops of spmd/ops.h against a host reference. Each input is a
// short program on one mesh of 1 to 8 devices (cpu or sim platform): a few
// slots of sharded arrays made from host values of every dtype, in shapes
// of rank 0..4 with dimensions 0..6 and 8 (now and then deeper, or huge
// dimensions beside a zero), split by random specs into even, uneven and
// empty blocks; then up to kMaxOps ops, each with operands taken from the
// slots or made to fit, sometimes with an output sharding and donations.
// Every op is computed again here, independently: row-major loops in double
// or exact integer arithmetic, with JAX's promotion and result dtypes as
// spmd/ops.h and docs/compute.md state them. Properties:
//  - a call the reference finds valid succeeds where spmd/ops.h promises
//    it; one JAX refuses (or the header refuses) is refused; no call
//    crashes, returns SPMD_ERR_INTERNAL or changes the caller's floating
//    point mode;
//  - a refusal starts its message with the function's name and then names
//    one of its arguments, writes no output, and leaves donated operands
//    usable and unchanged;
//  - a result has the reference's dtype and shape, the requested output
//    sharding, blocks laid out by the ceil rule, replicas equal bit for
//    bit, and the reference's values: exactly for integer and bool
//    results, copies, conversions, comparisons, add/sub/mul/div/max/min/
//    neg/abs/relu and max/min/argmax reductions; within (n + c) u sum|x|
//    for float sums, means and products (u: the unit roundoff); within a
//    few ulps for transcendental functions, pow and softmax;
//  - a donated operand is refused afterwards, naming the op it went to.
// Float kernels flush subnormals (docs/compute.md), so a value below the
// compute type's smallest normal matches zero.
//
// Switches:
//  SPMD_FUZZ_OPS_SKIP_KNOWN=1  skips the calls that reach defects known and
//                              being fixed (listed above skip_known());
//  SPMD_FUZZ_OPS_SKIP_FOUND=1  skips those this fuzzer found since
//                              (listed above skip_found());
//  SPMD_FUZZ_TRACE=1           prints every call, its arguments and status.
//
// Input: byte 0 picks the mesh (bits 0-3, kMeshes), huge dimensions
// (bit 5) and the sim platform (bits 4 and 6 both set: its queues make a
// program ten times slower, so a quarter of them run there). Then each op
// is an opcode byte (kOps, modulo their count) and the bytes its reader
// takes (each op_* function below, in order); an operand is one byte
// (slot = b % 4; (b / 4) % 4 below 2 reuses a live slot, 3 makes an array
// of a random shape, otherwise one that fits) and, for a new array, its
// dtype, shape, spec and value bytes (new_array). make-corpus.py writes
// seeds in this format. Reading past the end gives zeros.
#include "fuzz_common.h"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define FUZZ_OPS_MXCSR 1
#endif

namespace {

using Shape = std::vector<int64_t>;

constexpr size_t kSlots = 4;
constexpr int kMaxOps = 6;
constexpr int64_t kMaxElements = 1 << 14;  // no op makes a bigger result
constexpr int64_t kMaxWork = 1 << 17;      // loop trips a contraction may take

bool env_flag(const char *name) {
  const char *v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}
const bool kSkipKnown = env_flag("SPMD_FUZZ_OPS_SKIP_KNOWN");
const bool kSkipFound = env_flag("SPMD_FUZZ_OPS_SKIP_FOUND");
const bool kTrace = env_flag("SPMD_FUZZ_TRACE");

void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void trace(const char *fmt, ...) {
  if (!kTrace) return;
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
}

// What the op being checked is, printed with any violation.
std::string g_call;

#define OPS_CHECK(cond, ...)                                  \
  do {                                                        \
    if (!(cond)) {                                            \
      std::fprintf(stderr, "\n==== in %s\n", g_call.c_str()); \
      FUZZ_CHECK(cond, __VA_ARGS__);                          \
    }                                                         \
  } while (0)

// ---- dtypes, rounding and JAX's promotion ----

const spmd_dtype kDtypes[] = {SPMD_F32, SPMD_F64, SPMD_F16, SPMD_BF16, SPMD_I32, SPMD_I64,
                              SPMD_U8,  SPMD_BOOL, SPMD_I8,  SPMD_I16,  SPMD_U16, SPMD_U32};

bool is_float(spmd_dtype t) {
  return t == SPMD_F32 || t == SPMD_F64 || t == SPMD_F16 || t == SPMD_BF16;
}
bool is_valid(spmd_dtype t) { return t >= SPMD_F32 && t <= SPMD_U32; }
bool is_unsigned(spmd_dtype t) { return t == SPMD_U8 || t == SPMD_U16 || t == SPMD_U32; }

size_t esize(spmd_dtype t) {
  switch (t) {
    case SPMD_F64:
    case SPMD_I64: return 8;
    case SPMD_F32:
    case SPMD_I32:
    case SPMD_U32: return 4;
    case SPMD_F16:
    case SPMD_BF16:
    case SPMD_I16:
    case SPMD_U16: return 2;
    default: return 1;
  }
}

const char *dname(spmd_dtype t) {
  switch (t) {
    case SPMD_F32: return "f32";
    case SPMD_F64: return "f64";
    case SPMD_F16: return "f16";
    case SPMD_BF16: return "bf16";
    case SPMD_I32: return "i32";
    case SPMD_I64: return "i64";
    case SPMD_U8: return "u8";
    case SPMD_BOOL: return "bool";
    case SPMD_I8: return "i8";
    case SPMD_I16: return "i16";
    case SPMD_U16: return "u16";
    case SPMD_U32: return "u32";
    default: return "?";
  }
}

struct Format {
  int mant, emin, emax;
};
Format format(spmd_dtype t) {
  switch (t) {
    case SPMD_F64: return {52, -1022, 1023};
    case SPMD_F16: return {10, -14, 15};
    case SPMD_BF16: return {7, -126, 127};
    default: return {23, -126, 127};
  }
}
double unit_roundoff(spmd_dtype t) { return std::ldexp(1.0, -format(t).mant - 1); }
double max_finite(spmd_dtype t) {
  const Format f = format(t);
  return std::ldexp(2.0 - std::ldexp(1.0, -f.mant), f.emax);
}
// The spacing of t's values at x.
double ulp(spmd_dtype t, double x) {
  const Format f = format(t);
  if (!std::isfinite(x)) return 0;
  const int e = x == 0 ? f.emin : std::max(std::ilogb(x), f.emin);
  return std::ldexp(1.0, e - f.mant);
}
// Float kernels compute in f32 (f64 for f64) and flush below its normals.
double flush_limit(spmd_dtype t) { return t == SPMD_F64 ? DBL_MIN : FLT_MIN; }

// x rounded to nearest even in t, subnormals kept, overflow to infinity.
double round_to(spmd_dtype t, double x) {
  if (t == SPMD_F64 || !std::isfinite(x) || x == 0) return x;
  const Format f = format(t);
  const int e = std::max(std::ilogb(x), f.emin);
  const double q = std::ldexp(1.0, e - f.mant);
  const double r = std::nearbyint(x / q) * q;
  if (std::fabs(r) > max_finite(t)) return std::copysign(INFINITY, x);
  return r;
}

// JAX's type lattice (jax._src.dtypes, x64 on, without uint64): each type's
// immediate successors. The join of two types is the least type above both.
std::vector<spmd_dtype> above(spmd_dtype t) {
  switch (t) {
    case SPMD_BOOL: return {SPMD_U8, SPMD_I8};
    case SPMD_U8: return {SPMD_U16, SPMD_I16};
    case SPMD_U16: return {SPMD_U32, SPMD_I32};
    case SPMD_U32: return {SPMD_I64};
    case SPMD_I8: return {SPMD_I16};
    case SPMD_I16: return {SPMD_I32};
    case SPMD_I32: return {SPMD_I64};
    case SPMD_I64: return {SPMD_F16, SPMD_BF16};
    case SPMD_F16:
    case SPMD_BF16: return {SPMD_F32};
    case SPMD_F32: return {SPMD_F64};
    default: return {};
  }
}
bool at_or_above(spmd_dtype hi, spmd_dtype lo) {
  if (hi == lo) return true;
  for (spmd_dtype n : above(lo))
    if (at_or_above(hi, n)) return true;
  return false;
}
spmd_dtype promote(spmd_dtype a, spmd_dtype b) {
  spmd_dtype best = SPMD_F64;
  for (spmd_dtype t : kDtypes)
    if (at_or_above(t, a) && at_or_above(t, b) && at_or_above(best, t)) best = t;
  return best;
}
// sin(x), x / y: floats keep their type, i64 gives f64, the rest f32.
spmd_dtype float_of(spmd_dtype t) {
  if (is_float(t)) return t;
  return t == SPMD_I64 ? SPMD_F64 : SPMD_F32;
}
// jnp.sum's type (x64 off, 64-bit types kept): bool and the signed types
// narrower than 32 bits sum in i32, the unsigned ones in u32.
spmd_dtype sum_type(spmd_dtype t) {
  if (t == SPMD_BOOL || t == SPMD_I8 || t == SPMD_I16) return SPMD_I32;
  if (t == SPMD_U8 || t == SPMD_U16) return SPMD_U32;
  return t;
}

// An integer type's range as doubles (exact).
double int_lo(spmd_dtype t) {
  return is_unsigned(t) ? 0 : t == SPMD_I64 ? -9223372036854775808.0 : -std::ldexp(1.0, 8 * int(esize(t)) - 1);
}
double int_hi(spmd_dtype t) {
  return t == SPMD_I64 ? 9223372036854775807.0
                       : std::ldexp(1.0, 8 * int(esize(t)) - (is_unsigned(t) ? 0 : 1)) - 1;
}

// One element: `f` for float dtypes, `i` for integers and bool (0 or 1).
struct V {
  double f = 0;
  int64_t i = 0;
};

int64_t wrap_to(spmd_dtype t, int64_t v) {
  switch (t) {
    case SPMD_I32: return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
    case SPMD_U8: return v & 0xff;
    case SPMD_I8: return static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint64_t>(v)));
    case SPMD_I16: return static_cast<int16_t>(static_cast<uint16_t>(static_cast<uint64_t>(v)));
    case SPMD_U16: return v & 0xffff;
    case SPMD_U32: return v & 0xffffffff;
    case SPMD_BOOL: return v != 0;
    default: return v;
  }
}
int64_t wrap_add(int64_t a, int64_t b) { return static_cast<int64_t>(uint64_t(a) + uint64_t(b)); }
int64_t wrap_sub(int64_t a, int64_t b) { return static_cast<int64_t>(uint64_t(a) - uint64_t(b)); }
int64_t wrap_mul(int64_t a, int64_t b) { return static_cast<int64_t>(uint64_t(a) * uint64_t(b)); }

// jnp.astype: floats round to nearest (from f64 through f32, as XLA);
// floats to integers truncate and saturate, NaN giving 0; integers wrap;
// anything to bool is != 0 (NaN is true); integers to 16-bit floats go
// through f32.
V convert(spmd_dtype from, V v, spmd_dtype to) {
  V r;
  if (is_float(from)) {
    if (is_float(to)) {
      r.f = to == SPMD_F64 ? v.f : round_to(to, round_to(SPMD_F32, v.f));
    } else if (to == SPMD_BOOL) {
      r.i = v.f != 0;
    } else if (std::isnan(v.f)) {
      r.i = 0;
    } else {
      const double t = std::trunc(v.f);
      if (to == SPMD_I64) {
        r.i = t >= 9223372036854775808.0   ? INT64_MAX
              : t < -9223372036854775808.0 ? INT64_MIN
                                           : static_cast<int64_t>(t);
      } else {
        r.i = static_cast<int64_t>(std::min(std::max(t, int_lo(to)), int_hi(to)));
      }
    }
    return r;
  }
  if (is_float(to)) {
    r.f = to == SPMD_F64 ? static_cast<double>(v.i)
                         : round_to(to, static_cast<double>(static_cast<float>(v.i)));
  } else {
    r.i = wrap_to(to, v.i);
  }
  return r;
}

// ---- element bytes ----

double f16_value(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double s = (h & 0x8000) ? -1 : 1;
  if (e == 31) return m ? NAN : s * INFINITY;
  if (e == 0) return s * std::ldexp(m, -24);
  return s * std::ldexp(1024 + m, e - 25);
}
// v must be an f16 value (or infinite, or NaN).
uint16_t f16_bits(double v) {
  if (std::isnan(v)) return 0x7e00;
  const uint16_t s = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (std::isinf(a)) return s | 0x7c00;
  if (a == 0) return s;
  const int e = std::ilogb(a);
  if (e < -14) return s | static_cast<uint16_t>(std::ldexp(a, 24));
  return s | static_cast<uint16_t>((e + 15) << 10) |
         static_cast<uint16_t>(std::ldexp(a, 10 - e) - 1024);
}

void put_value(spmd_dtype t, const V &v, unsigned char *p) {
  switch (t) {
    case SPMD_F32: {
      const float f = static_cast<float>(v.f);
      std::memcpy(p, &f, 4);
      break;
    }
    case SPMD_F64: std::memcpy(p, &v.f, 8); break;
    case SPMD_F16: {
      const uint16_t h = f16_bits(v.f);
      std::memcpy(p, &h, 2);
      break;
    }
    case SPMD_BF16: {
      const float f = static_cast<float>(v.f);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      const uint16_t h = std::isnan(v.f) ? 0x7fc0 : static_cast<uint16_t>(u >> 16);
      std::memcpy(p, &h, 2);
      break;
    }
    case SPMD_I32:
    case SPMD_U32: {
      const uint32_t i = static_cast<uint32_t>(v.i);
      std::memcpy(p, &i, 4);
      break;
    }
    case SPMD_I16:
    case SPMD_U16: {
      const uint16_t i = static_cast<uint16_t>(v.i);
      std::memcpy(p, &i, 2);
      break;
    }
    case SPMD_I64: std::memcpy(p, &v.i, 8); break;
    default: *p = static_cast<unsigned char>(v.i); break;
  }
}

V get_value(spmd_dtype t, const unsigned char *p) {
  V v;
  switch (t) {
    case SPMD_F32: {
      float f;
      std::memcpy(&f, p, 4);
      v.f = f;
      break;
    }
    case SPMD_F64: std::memcpy(&v.f, p, 8); break;
    case SPMD_F16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      v.f = f16_value(h);
      break;
    }
    case SPMD_BF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      const uint32_t u = static_cast<uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      v.f = f;
      break;
    }
    case SPMD_I32: {
      int32_t i;
      std::memcpy(&i, p, 4);
      v.i = i;
      break;
    }
    case SPMD_I64: std::memcpy(&v.i, p, 8); break;
    case SPMD_I8: v.i = static_cast<int8_t>(*p); break;
    case SPMD_I16: {
      int16_t i;
      std::memcpy(&i, p, 2);
      v.i = i;
      break;
    }
    case SPMD_U16: {
      uint16_t i;
      std::memcpy(&i, p, 2);
      v.i = i;
      break;
    }
    case SPMD_U32: {
      uint32_t i;
      std::memcpy(&i, p, 4);
      v.i = i;
      break;
    }
    case SPMD_BOOL: v.i = *p; break;  // a byte other than 0 or 1 shows as such
    default: v.i = *p; break;
  }
  return v;
}

std::string value_str(spmd_dtype t, const V &v) {
  char b[64];
  if (is_float(t))
    std::snprintf(b, sizeof b, "%.17g", v.f);
  else
    std::snprintf(b, sizeof b, "%lld", static_cast<long long>(v.i));
  return b;
}

// ---- shapes ----

std::string shape_str(const Shape &s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

// Elements of a shape: 0 when a dimension is, else the product saturated
// at INT64_MAX.
int64_t numel(const Shape &s) {
  for (int64_t d : s)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  return n;
}

// The bound on every array and result (docs/compute.md, Shapes): at most
// SPMD_MAX_NDIM dimensions, whose non-zero sizes span at most 2^62 bytes.
bool shape_ok(const Shape &s, spmd_dtype t) {
  if (s.size() > SPMD_MAX_NDIM) return false;
  unsigned __int128 span = esize(t);
  for (int64_t d : s) {
    if (d < 0) return false;
    if (d > 0) span *= static_cast<unsigned __int128>(d);
    if (span > (static_cast<unsigned __int128>(1) << 62)) return false;
  }
  return true;
}

bool has_huge_dim(const Shape &s) {
  for (int64_t d : s)
    if (d > (int64_t{1} << 20)) return true;
  return false;
}

void unravel(int64_t k, const Shape &s, int64_t *idx) {
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = k % s[d];
    k /= s[d];
  }
}
int64_t ravel(const int64_t *idx, const Shape &s) {
  int64_t k = 0;
  for (size_t d = 0; d < s.size(); ++d) k = k * s[d] + idx[d];
  return k;
}

// NumPy broadcasting of two shapes.
bool broadcast(const Shape &a, const Shape &b, Shape &out) {
  const size_t n = std::max(a.size(), b.size());
  out.assign(n, 1);
  for (size_t d = 0; d < n; ++d) {
    const int64_t x = d + a.size() >= n ? a[d + a.size() - n] : 1;
    const int64_t y = d + b.size() >= n ? b[d + b.size() - n] : 1;
    if (x != y && x != 1 && y != 1) return false;
    out[d] = x == 1 ? y : x;
  }
  return true;
}

// The flat index in an operand of shape s of the result element at idx
// (rank n), right-aligned, size-1 dimensions broadcast.
int64_t broadcast_index(const int64_t *idx, size_t n, const Shape &s) {
  int64_t k = 0;
  for (size_t d = 0; d < s.size(); ++d) k = k * s[d] + (s[d] == 1 ? 0 : idx[n - s.size() + d]);
  return k;
}

// ---- host arrays and expectations ----

struct Host {
  spmd_dtype dt = SPMD_F32;
  Shape shape;
  std::vector<V> v;
};

enum class Verdict { Valid, Invalid, Either };

// What the reference says of a call: valid (must succeed), invalid (must
// be refused) or either (the header does not promise success); when
// `computed`, the result's dtype and shape, and when `values` its values,
// each float with an allowed distance (0: exact, < 0: any value) and each
// integer with a second accepted value.
struct Expect {
  Verdict verdict = Verdict::Valid;
  std::string why;
  bool computed = false;
  bool values = false;
  spmd_dtype dt = SPMD_F32;
  Shape shape;
  std::vector<V> ref;
  std::vector<double> tol;
  std::vector<int64_t> alt;

  // Values are kept for results of at most kMaxElements elements.
  void init(spmd_dtype t, const Shape &s) {
    computed = true;
    dt = t;
    shape = s;
    const int64_t n = numel(s);
    values = n <= kMaxElements;
    ref.assign(values ? static_cast<size_t>(n) : 0, V{});
    tol.assign(ref.size(), 0);
    alt.assign(ref.size(), 0);
  }
  void set_int(size_t k, int64_t v) {
    ref[k].i = v;
    alt[k] = v;
  }
};

Expect invalid(const std::string &why) {
  Expect e;
  e.verdict = Verdict::Invalid;
  e.why = why;
  return e;
}
Expect either(const std::string &why) {
  Expect e;
  e.verdict = Verdict::Either;
  e.why = why;
  return e;
}

bool float_matches(spmd_dtype t, double got, double ref, double tol) {
  if (tol < 0) return true;
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got);
  const double lim = flush_limit(t);
  if (std::fabs(ref) < lim && std::fabs(got) < lim) return true;
  if (std::isinf(got)) {
    if (std::isinf(ref)) return got == ref;
    // A sum within tol of the overflow threshold may round to infinity.
    return tol > 0 && std::signbit(got) == std::signbit(ref) &&
           std::fabs(ref) + tol >= max_finite(t) + ulp(t, max_finite(t)) / 2;
  }
  if (std::isinf(ref)) return false;
  return std::fabs(got - ref) <= tol;
}

bool matches(const Expect &e, size_t k, const V &got) {
  if (is_float(e.dt)) return float_matches(e.dt, got.f, e.ref[k].f, e.tol[k]);
  return got.i == e.ref[k].i || got.i == e.alt[k];
}

// ---- meshes ----

const fuzz::MeshDef kMeshes[16] = {
    {{8}, {"x"}, {}},
    {{2, 4}, {"x", "y"}, {}},
    {{4, 2}, {"x", "y"}, {}},
    {{2, 2, 2}, {"x", "y", "z"}, {}},
    {{3}, {"x"}, {}},
    {{2, 3}, {"x", "y"}, {}},
    {{1, 4}, {"x", "y"}, {}},
    {{5}, {"x"}, {}},
    {{8}, {"x"}, {7, 6, 5, 4, 3, 2, 1, 0}},
    {{2}, {"x"}, {}},
    {{1}, {"x"}, {}},
    {{2, 2}, {"x", "y"}, {3, 1, 2, 0}},
    {{3, 2}, {"x", "y"}, {}},
    {{4}, {"x"}, {}},
    {{2, 1, 3}, {"x", "y", "z"}, {}},
    {{2, 4}, {"x", "y"}, {0, 2, 4, 6, 1, 3, 5, 7}},
};

std::vector<int> mesh_devices(const fuzz::MeshDef &def) {
  if (!def.devices.empty()) return def.devices;
  int64_t n = 1;
  for (int64_t s : def.shape) n *= s;
  std::vector<int> d(static_cast<size_t>(n));
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<int>(i);
  return d;
}

// For each mesh: [0] itself, [1] another mesh over the same devices (one
// axis 'w'), [2] a mesh over other devices (an output sharding there is
// refused). Made when a program first asks for them.
struct Platform {
  spmd_runtime *rt = nullptr;
  spmd_mesh *meshes[16][3] = {};
};

void open_platform(Platform &pf, bool sim, size_t m) {
  if (pf.rt == nullptr) {
    // No cache of freed device memory: an input that frees all it made
    // leaves nothing behind, and LeakSanitizer has nothing to scan for.
    spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
    o.platform = sim ? SPMD_PLATFORM_SIM : SPMD_PLATFORM_CPU;
    o.cpu_device_count = 8;
    o.worker_threads = 1;
    o.device_cache_bytes = -1;
    if (spmd_runtime_create(&o, &pf.rt) != SPMD_OK) {
      std::fprintf(stderr, "cannot create a runtime: %s\n", spmd_last_error());
      std::abort();
    }
  }
  if (pf.meshes[m][0] != nullptr) return;
  const fuzz::MeshDef &def = kMeshes[m];
  pf.meshes[m][0] = fuzz::make_mesh(pf.rt, def);
  std::vector<int> devs = mesh_devices(def);
  pf.meshes[m][1] = fuzz::make_mesh(pf.rt, {{static_cast<int64_t>(devs.size())}, {"w"}, devs});
  // Other devices: the first one outside the mesh, or half of all 8.
  std::vector<int> other;
  if (devs.size() < 8) {
    for (int d = 0; d < 8 && other.empty(); ++d)
      if (std::find(devs.begin(), devs.end(), d) == devs.end()) other.push_back(d);
  } else {
    other = {devs[0], devs[1], devs[2], devs[3]};
  }
  pf.meshes[m][2] = fuzz::make_mesh(pf.rt, {{static_cast<int64_t>(other.size())}, {"w"}, other});
}

void close_platform(Platform &pf) {
  for (auto &row : pf.meshes)
    for (spmd_mesh *&m : row) spmd_mesh_destroy(m), m = nullptr;
  spmd_runtime_destroy(pf.rt);
  pf.rt = nullptr;
}

// ---- the state of a program ----

struct Slot {
  spmd_array *h = nullptr;
  bool live = false;     // holds an array
  bool donated = false;  // holds a donated handle (to be refused)
  int mesh = 0;          // 0: the program's mesh, 1: the other one over its devices
  Host host;
  std::string donated_to;
};

struct Program;

// One call of an op: what it is, its operands (slots, in the op's operand
// order), what the reference expects, and how to make it.
struct Call {
  const char *fn = "";
  std::string desc;
  std::vector<int> operands;
  Expect e;
  bool donations = true;  // spmd_concatenate refuses them
  bool to_float = false;  // operands are converted to floats first (mean, softmax)
  bool promotes = false;  // operands are converted to the result's type first
  bool combines = false;  // partial results may be combined across devices
  std::function<spmd_status(const spmd_op_options *, spmd_array **)> invoke;
};

// ---- the skip switches ----

// Defects known and being fixed, each named where it is detected:
//  - dot_general and einsum results of more than 8 dimensions;
//  - int32 and bool max/min over a split dimension with an empty block;
//  - bool contractions over a split dimension (int32 results, or sums);
//  - where with a float condition that is NaN, infinite or in (-1, 1);
//  - reshape's element count overflowing;
//  - elementwise ops and concatenate on empty arrays of huge dimensions;
//  - astype of floats outside an integer type's range (JAX saturates).
bool skip_known(const char *what) {
  if (!kSkipKnown) return false;
  trace("  skipped (known defect: %s)\n", what);
  return true;
}
// Defects this fuzzer found, named as above:
//  - results of 8 dimensions whose partial sums are combined across
//    devices are refused ("a spec has at most 8 dimensions");
//  - an operand converted first (to the promoted type, or a float for
//    mean and softmax) breaks the bound on shapes where the result does
//    not, and the call is refused;
//  - matmul and einsum refusals name dot_general's `dims`, and reduce
//    refusals past the bound name `shape`, neither their argument;
//  - f16 means whose sum passes 65504 overflow (JAX divides in f32);
//  - 2^63 is taken as fitting int64 (a scalar; UB converting it);
//  - abs and relu of bool are refused (JAX: bool, and an integer);
//  - rsqrt and logistic of integers and bool are accepted (JAX: TypeError);
//  - pow of bools gives f32 (JAX: int32);
//  - integers meet 16-bit floats in f32, not in the 16-bit type (JAX);
//  - softmax of bool is accepted (JAX: TypeError);
//  - softmax of integers converts them to floats before subtracting the
//    max (JAX subtracts in the integer type);
//  - einsum sums a lone letter (one operand's, not in the output) in
//    jnp.sum's type of that operand: u8 in i32 (JAX: u8), bf16 before
//    promoting to the other operand's f32 (JAX promotes first).
bool skip_found(const char *what) {
  if (!kSkipFound) return false;
  trace("  skipped (found defect: %s)\n", what);
  return true;
}

// The names a refusal of each function may start with (after "fn: ").
bool names_an_argument(const char *fn, const std::string &rest) {
  static const std::map<std::string, std::vector<std::string>> kArgs = {
      {"spmd_unary", {"op", "x", "options", "out"}},
      {"spmd_astype", {"x", "dtype", "options", "out"}},
      {"spmd_binary", {"op", "x", "y", "options", "out"}},
      {"spmd_binary_scalar", {"op", "x", "s", "scalar", "options", "out"}},
      {"spmd_scalar_binary", {"op", "x", "s", "scalar", "options", "out"}},
      {"spmd_where", {"cond", "x", "y", "options", "out"}},
      {"spmd_reduce", {"op", "x", "naxes", "axes", "keepdims", "options", "out"}},
      {"spmd_argmax", {"x", "axis", "options", "out"}},
      {"spmd_softmax", {"x", "axis", "log", "options", "out"}},
      {"spmd_dot_general", {"lhs", "rhs", "dims", "options", "out"}},
      {"spmd_matmul", {"a", "b", "options", "out"}},
      {"spmd_einsum", {"subscripts", "a", "b", "options", "out"}},
      {"spmd_transpose", {"x", "naxes", "perm", "options", "out"}},
      {"spmd_reshape", {"x", "ndim", "shape", "options", "out"}},
      {"spmd_broadcast_to", {"x", "ndim", "shape", "options", "out"}},
      {"spmd_slice", {"x", "ndim", "start", "stop", "options", "out"}},
      {"spmd_concatenate", {"n", "xs", "axis", "options", "out"}},
  };
  size_t k = 0;
  while (k < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[k])) || rest[k] == '_'))
    ++k;
  const std::string word = rest.substr(0, k);
  const auto it = kArgs.find(fn);
  if (it == kArgs.end()) return false;
  if (word == "dims" &&
      (std::strcmp(fn, "spmd_matmul") == 0 || std::strcmp(fn, "spmd_einsum") == 0) &&
      skip_found("matmul and einsum refusals that name dot_general's dims"))
    return true;
  if (word == "shape" && std::strcmp(fn, "spmd_reduce") == 0 &&
      skip_found("reduce refusals past the bound on shapes that name `shape`"))
    return true;
  return std::find(it->second.begin(), it->second.end(), word) != it->second.end();
}

// Shards per dimension of an array's sharding, and the spec's axes.
struct Layout {
  spmd_mesh *mesh = nullptr;  // owned
  fuzz::Dims dims;
  std::vector<std::string> axis_names;
  Shape axis_sizes;
  ~Layout() { spmd_mesh_destroy(mesh); }
  int64_t splits(size_t d) const {
    int64_t n = 1;
    if (d >= dims.size()) return 1;
    for (const auto &a : dims[d])
      for (size_t i = 0; i < axis_names.size(); ++i)
        if (axis_names[i] == a) n *= axis_sizes[i];
    return n;
  }
};

void layout_of(const spmd_sharding *s, Layout &l) {
  spmd_spec *spec = nullptr;
  OPS_CHECK(spmd_sharding_spec(s, &spec) == SPMD_OK, "spmd_sharding_spec failed");
  l.dims = fuzz::spec_dims(spec);
  spmd_spec_destroy(spec);
  OPS_CHECK(spmd_sharding_mesh(s, &l.mesh) == SPMD_OK, "spmd_sharding_mesh failed");
  size_t nd = 0;
  OPS_CHECK(spmd_mesh_ndim(l.mesh, &nd) == SPMD_OK, "spmd_mesh_ndim failed");
  for (size_t a = 0; a < nd; ++a) {
    const char *name = nullptr;
    int64_t size = 0;
    OPS_CHECK(spmd_mesh_axis_name(l.mesh, a, &name) == SPMD_OK, "spmd_mesh_axis_name failed");
    OPS_CHECK(spmd_mesh_axis_size(l.mesh, a, &size) == SPMD_OK, "spmd_mesh_axis_size failed");
    l.axis_names.emplace_back(name);
    l.axis_sizes.push_back(size);
  }
}

Shape splits_of(const spmd_array *a, size_t rank) {
  spmd_sharding *s = nullptr;
  OPS_CHECK(spmd_array_sharding(a, &s) == SPMD_OK, "spmd_array_sharding failed on a live array");
  Layout l;
  layout_of(s, l);
  spmd_sharding_destroy(s);
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) out[d] = l.splits(d);
  return out;
}

// Whether a dimension of size n split `parts` ways leaves a device an empty
// block (ceil rule).
bool has_empty_block(int64_t n, int64_t parts) {
  if (parts <= 1 || n == 0) return false;
  const int64_t c = n / parts + (n % parts != 0);
  return static_cast<__int128>(c) * (parts - 1) >= n;
}

// ---- the reference ops ----

// x op y for operands already converted to t, by JAX's rules: the value
// (an integer 0 or 1 for comparisons), its allowed distance `tol` and a
// second accepted integer `alt`.
V binary_value(spmd_binary_op op, spmd_dtype t, const V &a, const V &b, double &tol, int64_t &alt) {
  V r;
  tol = 0;
  const bool cmp = op >= SPMD_BINARY_EQ;
  if (is_float(t)) {
    const double x = a.f, y = b.f;
    auto rounded = [&](double v) { return t == SPMD_F64 ? v : round_to(t, round_to(SPMD_F32, v)); };
    switch (op) {
      case SPMD_BINARY_ADD: r.f = rounded(x + y); break;
      case SPMD_BINARY_SUB: r.f = rounded(x - y); break;
      case SPMD_BINARY_MUL: r.f = rounded(x * y); break;
      case SPMD_BINARY_DIV: r.f = rounded(x / y); break;
      case SPMD_BINARY_MAX: r.f = std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); break;
      case SPMD_BINARY_MIN: r.f = std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); break;
      case SPMD_BINARY_POW:
        r.f = std::pow(x, y);
        tol = 4 * ulp(t, r.f);
        r.f = round_to(t, r.f);
        break;
      case SPMD_BINARY_EQ: r.i = x == y; break;
      case SPMD_BINARY_NE: r.i = x != y; break;
      case SPMD_BINARY_LT: r.i = x < y; break;
      case SPMD_BINARY_LE: r.i = x <= y; break;
      case SPMD_BINARY_GT: r.i = x > y; break;
      case SPMD_BINARY_GE: r.i = x >= y; break;
    }
    alt = r.i;
    return r;
  }
  const int64_t x = a.i, y = b.i;
  switch (op) {
    case SPMD_BINARY_ADD: r.i = t == SPMD_BOOL ? (x | y) : wrap_add(x, y); break;
    case SPMD_BINARY_SUB: r.i = wrap_sub(x, y); break;
    case SPMD_BINARY_MUL: r.i = t == SPMD_BOOL ? (x & y) : wrap_mul(x, y); break;
    case SPMD_BINARY_MAX: r.i = std::max(x, y); break;
    case SPMD_BINARY_MIN: r.i = std::min(x, y); break;
    case SPMD_BINARY_POW: {
      // XLA's integer power: negative exponents give 0 but for bases 1
      // and -1. JAX's jnp.power computes from the exponent's low 6 bits
      // only, which the second accepted value is.
      if (y < 0)
        r.i = x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
      else {
        int64_t acc = 1, base = x;
        for (int64_t e = y; e > 0; e >>= 1) {
          if (e & 1) acc = wrap_mul(acc, base);
          base = wrap_mul(base, base);
        }
        r.i = acc;
      }
      int64_t acc = (x == 0 && y != 0) ? 0 : 1, base = x;
      uint64_t e = static_cast<uint64_t>(y);
      for (int k = 0; k < 6; ++k) {
        if (e & 1) acc = wrap_mul(acc, base);
        base = wrap_mul(base, base);
        e >>= 1;
      }
      alt = wrap_to(t, acc);
      r.i = wrap_to(t, r.i);
      return r;
    }
    case SPMD_BINARY_EQ: r.i = x == y; break;
    case SPMD_BINARY_NE: r.i = x != y; break;
    case SPMD_BINARY_LT: r.i = x < y; break;
    case SPMD_BINARY_LE: r.i = x <= y; break;
    case SPMD_BINARY_GT: r.i = x > y; break;
    case SPMD_BINARY_GE: r.i = x >= y; break;
    default: break;
  }
  if (!cmp) r.i = wrap_to(t, r.i);
  alt = r.i;
  return r;
}

const char *const kBinaryNames[] = {"?",   "add", "sub", "mul", "div", "max", "min",
                                    "pow", "eq",  "ne",  "lt",  "le",  "gt",  "ge"};
const char *const kUnaryNames[] = {"?",    "neg",      "abs",       "exp",       "log",
                                   "sin",  "cos",      "tanh",      "sqrt",      "rsqrt",
                                   "relu", "logistic", "gelu_tanh", "gelu_exact"};

// Elementwise x op y over broadcast shapes (operands given as host arrays;
// a scalar operand is a rank-0 host array of the promoted type).
Expect ref_binary(spmd_binary_op op, const Host &x, const Host &y, spmd_dtype t) {
  if (op < SPMD_BINARY_ADD || op > SPMD_BINARY_GE) return invalid("not a spmd_binary_op");
  Shape shape;
  if (!broadcast(x.shape, y.shape, shape)) return invalid("shapes do not broadcast");
  if (op == SPMD_BINARY_SUB && t == SPMD_BOOL) return invalid("sub of bools (JAX: TypeError)");
  spmd_dtype ct = t;                                           // the operands' type
  if (op == SPMD_BINARY_DIV) ct = float_of(t);                 // true division
  if (op == SPMD_BINARY_POW && t == SPMD_BOOL) ct = SPMD_I32;  // JAX: bool ** bool is int32
  const bool cmp = op >= SPMD_BINARY_EQ;
  Expect e;
  e.init(cmp ? SPMD_BOOL : ct, shape);
  std::vector<int64_t> idx(shape.size());
  for (size_t k = 0; k < e.ref.size(); ++k) {
    unravel(static_cast<int64_t>(k), shape, idx.data());
    const V a = convert(
        t,
        convert(x.dt, x.v[static_cast<size_t>(broadcast_index(idx.data(), shape.size(), x.shape))],
                t),
        ct);
    const V b = convert(
        t,
        convert(y.dt, y.v[static_cast<size_t>(broadcast_index(idx.data(), shape.size(), y.shape))],
                t),
        ct);
    double tol = 0;
    int64_t alt = 0;
    e.ref[k] = binary_value(op, ct, a, b, tol, alt);
    e.tol[k] = tol;
    e.alt[k] = alt;
  }
  return e;
}

// The type of x op s for a Python scalar s (spmd_binary_scalar).
bool scalar_type(spmd_dtype x, double s, spmd_dtype &t) {
  if (is_float(x)) {
    t = x;
    return true;
  }
  if (!(std::isfinite(s) && std::trunc(s) == s)) {
    t = float_of(x);
    return true;
  }
  t = x == SPMD_BOOL ? SPMD_I32 : x;
  // A Python int becomes t wrapping (scalar_host), as JAX converts it; JAX
  // raises OverflowError outside int32 (int64 beside int64).
  if (t == SPMD_I64) return s >= -9223372036854775808.0 && s < 9223372036854775808.0;
  return s >= int_lo(SPMD_I32) && s <= int_hi(SPMD_I32);
}

Host scalar_host(spmd_dtype t, double s) {
  Host h;
  h.dt = t;
  V v;
  // A Python float reaches a 16-bit type through f32, as XLA converts.
  if (is_float(t))
    v.f = t == SPMD_F64 ? s : round_to(t, round_to(SPMD_F32, s));
  else
    v.i = wrap_to(t, static_cast<int64_t>(s));
  h.v.push_back(v);
  return h;
}

Expect ref_unary(spmd_unary_op op, const Host &x) {
  if (op < SPMD_UNARY_NEG || op > SPMD_UNARY_GELU_EXACT) return invalid("not a spmd_unary_op");
  const spmd_dtype dt = x.dt;
  if (op == SPMD_UNARY_NEG && dt == SPMD_BOOL) return invalid("neg of bool (JAX: TypeError)");
  if ((op == SPMD_UNARY_RSQRT || op == SPMD_UNARY_LOGISTIC) && !is_float(dt))
    return invalid("lax.rsqrt and lax.logistic take floats only (JAX: TypeError)");
  Expect e;
  if (op == SPMD_UNARY_NEG || op == SPMD_UNARY_ABS || op == SPMD_UNARY_RELU) {
    // jnp.abs of bool is bool; jax.nn.relu of bool is an integer.
    const spmd_dtype rt = op == SPMD_UNARY_RELU && dt == SPMD_BOOL ? SPMD_I32 : dt;
    e.init(rt, x.shape);
    for (size_t k = 0; k < e.ref.size(); ++k) {
      const V a = x.v[k];
      if (is_float(dt)) {
        e.ref[k].f = op == SPMD_UNARY_NEG           ? -a.f
                     : op == SPMD_UNARY_ABS         ? std::fabs(a.f)
                     : (std::isnan(a.f) || a.f > 0) ? a.f
                                                    : 0.0;
      } else {
        const int64_t v = op == SPMD_UNARY_NEG   ? wrap_sub(0, a.i)
                          : op == SPMD_UNARY_ABS ? (a.i < 0 ? wrap_sub(0, a.i) : a.i)
                                                 : std::max<int64_t>(a.i, 0);
        e.set_int(k, wrap_to(rt, v));
      }
    }
    return e;
  }
  const spmd_dtype rt = float_of(dt);
  e.init(rt, x.shape);
  const double u = unit_roundoff(rt == SPMD_F64 ? SPMD_F64 : SPMD_F32);
  for (size_t k = 0; k < e.ref.size(); ++k) {
    const double v = convert(dt, x.v[k], rt).f;
    double r = 0, tol_ulps = 4, abs_tol = 0;
    switch (op) {
      case SPMD_UNARY_EXP: r = std::exp(v); break;
      case SPMD_UNARY_LOG: r = std::log(v); break;
      case SPMD_UNARY_SIN: r = std::sin(v); break;
      case SPMD_UNARY_COS: r = std::cos(v); break;
      case SPMD_UNARY_TANH: r = std::tanh(v); break;
      case SPMD_UNARY_SQRT: r = std::sqrt(v); break;
      case SPMD_UNARY_RSQRT: r = 1 / std::sqrt(v); break;
      case SPMD_UNARY_LOGISTIC: r = 1 / (1 + std::exp(-v)); break;
      case SPMD_UNARY_GELU_TANH:
        r = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        // 1 + tanh(z) cancels for z near -3 (docs/compute.md).
        tol_ulps = 8;
        abs_tol = 32 * u * (1 + std::fabs(v));
        break;
      default:
        r = 0.5 * v * std::erfc(-v / std::sqrt(2.0));
        tol_ulps = 8;
        abs_tol = 32 * u * (1 + std::fabs(v));
        break;
    }
    e.ref[k].f = r;
    e.tol[k] = std::isfinite(r) ? tol_ulps * ulp(rt, r) + abs_tol : 0;
  }
  return e;
}

Expect ref_astype(const Host &x, spmd_dtype to) {
  if (!is_valid(to)) return invalid("not a dtype");
  Expect e;
  e.init(to, x.shape);
  for (size_t k = 0; k < e.ref.size(); ++k) {
    e.ref[k] = convert(x.dt, x.v[k], to);
    e.alt[k] = e.ref[k].i;
  }
  return e;
}

Expect ref_where(const Host &c, const Host &x, const Host &y) {
  Shape s1, shape;
  if (!broadcast(c.shape, x.shape, s1) || !broadcast(s1, y.shape, shape))
    return invalid("shapes do not broadcast");
  const spmd_dtype t = promote(x.dt, y.dt);
  Expect e;
  e.init(t, shape);
  std::vector<int64_t> idx(shape.size());
  for (size_t k = 0; k < e.ref.size(); ++k) {
    unravel(static_cast<int64_t>(k), shape, idx.data());
    const size_t n = shape.size();
    const bool take =
        convert(c.dt, c.v[static_cast<size_t>(broadcast_index(idx.data(), n, c.shape))], SPMD_BOOL)
            .i != 0;
    const Host &h = take ? x : y;
    e.ref[k] = convert(h.dt, h.v[static_cast<size_t>(broadcast_index(idx.data(), n, h.shape))], t);
    e.alt[k] = e.ref[k].i;
  }
  return e;
}

// Normalises axis a of a rank-n array; false when out of range.
bool norm_axis(int64_t a, size_t n, size_t &out) {
  const int64_t r = static_cast<int64_t>(n);
  if (a < -r || a >= r) return false;
  out = static_cast<size_t>(a < 0 ? a + r : a);
  return true;
}

// The float sum of `vals` as kernels compute it in `acc` and round to t:
// the value, and its allowed distance ((n + 8) u_acc sum|x| + 2 ulps).
void float_sum(const std::vector<double> &vals, spmd_dtype t, double divisor, V &out, double &tol) {
  double s = 0, mag = 0;
  bool finite = true;
  for (double v : vals) {
    s += v;
    if (std::isfinite(v))
      mag += std::fabs(v);
    else
      finite = false;
  }
  const spmd_dtype acc = t == SPMD_F64 ? SPMD_F64 : SPMD_F32;
  out.f = s / divisor;
  if (mag > max_finite(acc) / 4) {
    tol = -1;  // a partial sum may overflow where the exact one does not
    return;
  }
  if (!finite) {
    tol = 0;
    return;
  }
  const double n = static_cast<double>(vals.size());
  tol = (n + 8) * unit_roundoff(acc) * mag / divisor + 2 * ulp(t, out.f);
}

Expect ref_reduce(spmd_reduce_op op, const Host &x, bool all, const std::vector<int64_t> &axes,
                  bool keep) {
  if (op < SPMD_REDUCE_SUM || op > SPMD_REDUCE_MIN) return invalid("not a spmd_reduce_op");
  const size_t n = x.shape.size();
  std::vector<bool> red(n, all);
  if (!all)
    for (int64_t a : axes) {
      size_t d;
      if (!norm_axis(a, n, d)) return invalid("axis out of range");
      if (red[d]) return invalid("axis repeated");
      red[d] = true;
    }
  Shape out;
  int64_t count = 1;
  for (size_t d = 0; d < n; ++d) {
    if (!red[d])
      out.push_back(x.shape[d]);
    else if (keep)
      out.push_back(1);
    if (red[d]) {
      if (x.shape[d] == 0 && (op == SPMD_REDUCE_MAX || op == SPMD_REDUCE_MIN))
        return invalid("max or min over an empty dimension (JAX: ValueError)");
      if (__builtin_mul_overflow(count, x.shape[d], &count)) count = INT64_MAX;
    }
  }
  const bool sum = op == SPMD_REDUCE_SUM || op == SPMD_REDUCE_MEAN;
  spmd_dtype rt = x.dt;
  if (op == SPMD_REDUCE_SUM) rt = sum_type(x.dt);
  if (op == SPMD_REDUCE_MEAN) rt = float_of(x.dt);
  Expect e;
  e.init(rt, out);
  if (!e.values || numel(x.shape) > kMaxWork) {
    e.values = false;
    return e;
  }
  // Gather every element's contribution by its result position.
  std::vector<std::vector<V>> groups(e.ref.size());
  std::vector<int64_t> idx(n), oidx(n);
  for (int64_t k = 0; k < numel(x.shape); ++k) {
    unravel(k, x.shape, idx.data());
    Shape o;
    size_t j = 0;
    for (size_t d = 0; d < n; ++d) {
      if (!red[d])
        oidx[j++] = idx[d];
      else if (keep)
        oidx[j++] = 0;
    }
    groups[static_cast<size_t>(ravel(oidx.data(), out))].push_back(x.v[static_cast<size_t>(k)]);
  }
  for (size_t k = 0; k < groups.size(); ++k) {
    const auto &g = groups[k];
    if (sum && is_float(rt)) {
      std::vector<double> vals;
      for (const V &v : g) vals.push_back(convert(x.dt, v, rt).f);
      float_sum(vals, rt, op == SPMD_REDUCE_MEAN ? static_cast<double>(count) : 1.0, e.ref[k],
                e.tol[k]);
      if (op == SPMD_REDUCE_MEAN && count == 0) e.ref[k].f = NAN, e.tol[k] = 0;
    } else if (sum) {
      int64_t s = 0;
      for (const V &v : g) s = wrap_add(s, v.i);
      e.set_int(k, wrap_to(rt, s));
    } else if (is_float(rt)) {
      double m = g[0].f;
      for (const V &v : g) {
        if (std::isnan(m) || std::isnan(v.f))
          m = NAN;
        else
          m = op == SPMD_REDUCE_MAX ? std::max(m, v.f) : std::min(m, v.f);
      }
      e.ref[k].f = m;
    } else {
      int64_t m = g[0].i;
      for (const V &v : g) m = op == SPMD_REDUCE_MAX ? std::max(m, v.i) : std::min(m, v.i);
      e.set_int(k, m);
    }
  }
  return e;
}

Expect ref_argmax(const Host &x, int64_t axis) {
  size_t a;
  if (!norm_axis(axis, x.shape.size(), a)) return invalid("axis out of range");
  if (x.shape[a] == 0) return invalid("argmax over an empty dimension (JAX: ValueError)");
  Shape out = x.shape;
  out.erase(out.begin() + static_cast<int64_t>(a));
  Expect e;
  e.init(SPMD_I32, out);
  if (!e.values) return e;
  const int64_t len = x.shape[a];
  std::vector<int64_t> oidx(out.size()), idx(x.shape.size());
  for (size_t k = 0; k < e.ref.size(); ++k) {
    unravel(static_cast<int64_t>(k), out, oidx.data());
    int64_t best = 0;
    V bv;
    for (int64_t j = 0; j < len; ++j) {
      for (size_t d = 0, o = 0; d < idx.size(); ++d) idx[d] = d == a ? j : oidx[o++];
      const V v = x.v[static_cast<size_t>(ravel(idx.data(), x.shape))];
      bool better;
      if (is_float(x.dt))
        better = j == 0 || (!std::isnan(bv.f) && (std::isnan(v.f) || v.f > bv.f));
      else
        better = j == 0 || v.i > bv.i;
      if (better) best = j, bv = v;
    }
    e.set_int(k, best);
  }
  return e;
}

// jax.nn.softmax / log_softmax: m = max, shifted = x - m, e = exp(shifted),
// softmax = e / sum(e), log_softmax = shifted - log(sum(e)). Integers
// subtract in their own type first, as JAX does.
Expect ref_softmax(const Host &x, int64_t axis, bool log) {
  size_t a;
  if (!norm_axis(axis, x.shape.size(), a)) return invalid("axis out of range");
  if (x.dt == SPMD_BOOL) return invalid("softmax of bool (JAX: TypeError in x - max)");
  const spmd_dtype rt = float_of(x.dt);
  Expect e;
  e.init(rt, x.shape);
  // JAX gives an empty result over an empty axis; spmd/ops.h refused it.
  if (x.shape[a] == 0) e.verdict = Verdict::Either, e.why = "softmax over an empty axis";
  if (!e.values || e.ref.empty()) return e;
  const double u = unit_roundoff(rt);
  const int64_t len = x.shape[a];
  Shape outer = x.shape;
  outer[a] = 1;
  std::vector<int64_t> idx(x.shape.size());
  std::vector<size_t> pos(static_cast<size_t>(len));
  std::vector<double> shifted(static_cast<size_t>(len)), ex(static_cast<size_t>(len));
  for (int64_t r = 0; r < numel(outer); ++r) {
    unravel(r, outer, idx.data());
    for (int64_t j = 0; j < len; ++j) {
      idx[a] = j;
      pos[static_cast<size_t>(j)] = static_cast<size_t>(ravel(idx.data(), x.shape));
    }
    bool garbage = false;
    if (is_float(x.dt)) {
      double m = -INFINITY;
      bool nan = false;
      for (size_t p : pos) nan = nan || std::isnan(x.v[p].f), m = std::max(m, x.v[p].f);
      if (nan) m = NAN;
      for (int64_t j = 0; j < len; ++j)
        shifted[static_cast<size_t>(j)] = x.v[pos[static_cast<size_t>(j)]].f - m;
    } else {
      int64_t m = INT64_MIN;
      for (size_t p : pos) m = std::max(m, x.v[p].i);
      for (int64_t j = 0; j < len; ++j) {
        // JAX subtracts in x's type: unsigned differences and overflowing
        // signed ones wrap, and then the values mean nothing.
        V dv;
        const bool over = __builtin_sub_overflow(x.v[pos[static_cast<size_t>(j)]].i, m, &dv.i);
        if (over || (is_unsigned(x.dt) ? dv.i != 0 : x.dt != SPMD_I64 && dv.i < int_lo(x.dt)))
          garbage = true;
        shifted[static_cast<size_t>(j)] = convert(x.dt == SPMD_I64 ? SPMD_I64 : SPMD_I32, dv, rt).f;
      }
    }
    double s = 0, big = 0;
    for (int64_t j = 0; j < len; ++j) {
      const double sh = shifted[static_cast<size_t>(j)];
      ex[static_cast<size_t>(j)] = std::exp(sh);
      s += ex[static_cast<size_t>(j)];
      if (std::isfinite(sh)) big = std::max(big, std::min(std::fabs(sh), 40.0));
    }
    const double rel_s = (2 * big + static_cast<double>(len) + 8) * u;
    for (int64_t j = 0; j < len; ++j) {
      const size_t k = pos[static_cast<size_t>(j)];
      const double sh = shifted[static_cast<size_t>(j)];
      const double ash = std::isfinite(sh) ? std::fabs(sh) : 0;
      double r, tol;
      if (log) {
        r = sh - std::log(s);
        tol = (2 * ash + 4 * std::fabs(std::log(s)) + 4) * u + rel_s + ulp(rt, r);
      } else {
        r = ex[static_cast<size_t>(j)] / s;
        tol = r * ((2 * ash + 8) * u + 2 * rel_s) + ulp(rt, r);
      }
      e.ref[k].f = r;
      e.tol[k] = garbage ? -1 : std::isfinite(r) ? tol : 0;
    }
  }
  return e;
}

// out[o] = sum of a[ia] * b[ib] over the labels not in `lo`: every
// dimension of a, b and the result carries a label (la, lb, lo), and
// `size` gives each label's size. bool sums are ors of ands, integer sums
// wrap, float sums hold within (k + 2) u_acc S + 10 u S (S = sum |a b|;
// partial sums of 16-bit types may round once per device group).
Expect ref_contract(const Host &a, const std::vector<int> &la, const Host &b,
                    const std::vector<int> &lb, const std::vector<int> &lo,
                    const std::vector<int64_t> &size) {
  const spmd_dtype t = promote(a.dt, b.dt);
  Shape out;
  for (int l : lo) out.push_back(size[static_cast<size_t>(l)]);
  Expect e;
  if (out.size() > SPMD_MAX_NDIM) return invalid("a result of more than SPMD_MAX_NDIM dimensions");
  e.init(t, out);
  std::vector<int> summed;
  for (size_t l = 0; l < size.size(); ++l)
    if (std::find(lo.begin(), lo.end(), static_cast<int>(l)) == lo.end() &&
        (std::find(la.begin(), la.end(), static_cast<int>(l)) != la.end() ||
         std::find(lb.begin(), lb.end(), static_cast<int>(l)) != lb.end()))
      summed.push_back(static_cast<int>(l));
  Shape sshape;
  for (int l : summed) sshape.push_back(size[static_cast<size_t>(l)]);
  const int64_t nsum = numel(sshape), nout = numel(out);
  if (!e.values || (nout > 0 && (nsum > kMaxWork || nout * nsum > kMaxWork))) {
    e.values = false;  // too much work to check; the call is still made
    return e;
  }
  std::vector<V> av(a.v.size()), bv(b.v.size());
  for (size_t k = 0; k < av.size(); ++k) av[k] = convert(a.dt, a.v[k], t);
  for (size_t k = 0; k < bv.size(); ++k) bv[k] = convert(b.dt, b.v[k], t);
  std::vector<int64_t> label(size.size(), 0), oi(out.size()), si(sshape.size()), ai(la.size()),
      bi(lb.size());
  const spmd_dtype acc = t == SPMD_F64 ? SPMD_F64 : SPMD_F32;
  for (int64_t o = 0; o < nout; ++o) {
    unravel(o, out, oi.data());
    for (size_t d = 0; d < lo.size(); ++d) label[static_cast<size_t>(lo[d])] = oi[d];
    double fs = 0, mag = 0;
    bool finite = true;
    int64_t is = 0;
    for (int64_t s = 0; s < nsum; ++s) {
      unravel(s, sshape, si.data());
      for (size_t d = 0; d < summed.size(); ++d) label[static_cast<size_t>(summed[d])] = si[d];
      for (size_t d = 0; d < la.size(); ++d) ai[d] = label[static_cast<size_t>(la[d])];
      for (size_t d = 0; d < lb.size(); ++d) bi[d] = label[static_cast<size_t>(lb[d])];
      const V &x = av[static_cast<size_t>(ravel(ai.data(), a.shape))];
      const V &y = bv[static_cast<size_t>(ravel(bi.data(), b.shape))];
      if (is_float(t)) {
        const double p = x.f * y.f;
        fs += p;
        if (std::isfinite(x.f) && std::isfinite(y.f))
          mag += std::fabs(p);
        else
          finite = false;
      } else if (t == SPMD_BOOL) {
        is |= x.i & y.i;
      } else {
        is = wrap_add(is, wrap_mul(x.i, y.i));
      }
    }
    const size_t k = static_cast<size_t>(o);
    if (!is_float(t)) {
      e.set_int(k, wrap_to(t, is));
      continue;
    }
    e.ref[k].f = fs;
    // Finite terms past the overflow threshold may sum to infinity or NaN
    // in the kernel's order where they do not in this one.
    if (mag > max_finite(t) / 4)
      e.tol[k] = -1;
    else if (!finite)
      e.tol[k] = 0;
    else
      e.tol[k] = (static_cast<double>(nsum) + 2) * unit_roundoff(acc) * mag +
                 10 * unit_roundoff(t) * mag + ulp(t, fs);
  }
  return e;
}

// ---- the program ----

// The values new arrays draw from (make-corpus.py keeps copies in order).
// clang-format off
const double kFloatSpecials[] = {
    0.0, -0.0, 0.5, -1.5, 0.25, -0.125, 0.1, 1e-3, 100, -300, 1234.5, 65504, 65520, 1e5, -3e9,
    3e9, 1e20, -1e30, 1e300, 16777217, 2147483648.0, 256, 255.5, -255, INFINITY, -INFINITY, NAN,
    1 + 0x1p-11 + 0x1p-30, 1 + 0x1p-8 + 0x1p-30, 3e38, -7.75, 2049};
const int64_t kIntSpecials[] = {
    0, 1, -1, 127, 128, 255, 256, -128, -129, 2147483647, -2147483647 - 1, 2147483648LL,
    4294967299LL, 9007199254740993LL, INT64_MAX, INT64_MIN, 1000000000000LL, 16777217, 16777216,
    65520, 70000, -70000, 3, 2049};
const double kScalars[] = {
    0, 1, -1, 2, 0.5, -2.5, 3, 7, 100, 255, 256, -129, 65504, 1e5, 2147483647.0, 2147483648.0,
    -2147483648.0, -2147483649.0, 9007199254740992.0, 9223372036854775808.0,
    -9223372036854775808.0, 1e19, INFINITY, -INFINITY, NAN, -0.0, 1e-3, 0.1, 3e38, 1e300, 64,
    -1e-50};
const int64_t kHuge[] = {int64_t{1} << 31, (int64_t{1} << 32) + 1, int64_t{1} << 62, INT64_MAX};
// clang-format on

struct Program {
  fuzz::Bytes &in;
  Platform &pf;
  size_t mesh_index;
  bool hostile;
  Slot slots[kSlots];
  std::vector<int> busy;  // slots the op being read already uses
  uint64_t rng = 0;

  Program(fuzz::Bytes &b, Platform &p, size_t m, bool h)
      : in(b), pf(p), mesh_index(m), hostile(h) {}
  ~Program() {
    for (Slot &s : slots) spmd_array_destroy(s.h);
  }

  const fuzz::MeshDef &def() const { return kMeshes[mesh_index]; }
  spmd_mesh *mesh(int which) const { return pf.meshes[mesh_index][which]; }

  uint64_t next() {  // splitmix64
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  void clear(int s) {
    spmd_array_destroy(slots[s].h);
    slots[s] = Slot{};
  }

  // A shape: rank 0..4 with dimensions 0..6 or 8 (or, from a byte >= 0xf0, rank
  // 5..8 of 1s and 2s); with huge dimensions allowed, a byte >= 0xf0 is a
  // huge dimension, and such a shape gets a 0 so it stays empty.
  Shape read_shape() {
    static const int64_t kDims[] = {1, 2, 3, 4, 5, 6, 0, 8};
    const uint8_t r = in.byte();
    Shape s;
    if (r >= 0xf0) {
      s.resize(5 + r % 4);
      for (auto &d : s) d = 1 + in.byte() % 2;
      return s;
    }
    s.resize(r % 5);
    for (auto &d : s) {
      const uint8_t b = in.byte();
      d = hostile && b >= 0xf0 ? kHuge[b % 4] : kDims[b % 8];
    }
    if (has_huge_dim(s) && numel(s) != 0) {
      size_t z = 0;
      while (z < s.size() && s[z] > (int64_t{1} << 20)) ++z;
      s[z < s.size() ? z : 0] = 0;
    }
    return s;
  }

  // A spec over the mesh's axes, one byte per dimension: None, an axis or
  // a pair of axes, each axis used once.
  std::string read_spec(size_t rank) {
    const auto &names = def().names;
    const size_t na = names.size();
    std::vector<bool> used(na, false);
    std::string text;
    for (size_t d = 0; d < rank; ++d) {
      const uint8_t b = in.byte();
      const unsigned kind = b % 8;
      std::vector<size_t> axes;
      if (kind == 4 || kind == 5) axes.push_back((b / 8) % na);
      if (kind == 6 && na > 1) {
        const size_t a0 = (b / 8) % na;
        axes.push_back(a0);
        axes.push_back((a0 + 1 + (b / 64) % (na - 1)) % na);
      }
      std::vector<size_t> keep;
      for (size_t a : axes)
        if (!used[a]) used[a] = true, keep.push_back(a);
      if (d) text += ", ";
      if (keep.empty())
        text += "None";
      else if (keep.size() == 1)
        text += names[keep[0]];
      else
        text += std::string("(") + names[keep[0]] + ", " + names[keep[1]] + ")";
    }
    return text;
  }

  // Values from a seed and a spice byte: small integers and halves, and
  // (more as the spice grows) the special values of kFloatSpecials and
  // kIntSpecials.
  std::vector<V> make_values(spmd_dtype t, int64_t n) {
    const uint8_t seed = in.byte(), spice = in.byte();
    rng = (uint64_t{seed} << 8 | spice) * 0x2545f4914f6cdd1dULL + 1;
    std::vector<V> out(static_cast<size_t>(n));
    for (V &v : out) {
      const uint64_t r = next();
      const bool special = (r >> 8) % 8 < spice % 8u;
      if (t == SPMD_BOOL) {
        v.i = (r >> 16) & 1;
      } else if (is_float(t)) {
        const double x = special ? kFloatSpecials[r % std::size(kFloatSpecials)]
                                 : static_cast<double>(static_cast<int>((r >> 16) % 21) - 10) / 2;
        v.f = t == SPMD_F64 ? x : round_to(t, x);
      } else {
        const int64_t x = special ? kIntSpecials[r % std::size(kIntSpecials)]
                                  : static_cast<int64_t>((r >> 16) % 11) - 5;
        v.i = wrap_to(t, x);
      }
    }
    return out;
  }

  // A new array in slot s: dtype byte (bit 7 with bit 6: on the other mesh
  // over the same devices), the shape (`fit`, or read), the spec, values.
  void new_array(int s, const Shape *fit) {
    clear(s);
    const uint8_t tb = in.byte();
    const spmd_dtype t = kDtypes[tb % 8];
    const int which = (tb & 0xc0) == 0xc0 ? 1 : 0;
    // A fit that no array can have (too many dimensions or elements) is
    // replaced by a random shape.
    const bool usable = fit && fit->size() <= SPMD_MAX_NDIM && numel(*fit) <= kMaxElements;
    const Shape shape = usable ? *fit : read_shape();
    std::string spec = read_spec(shape.size());
    if (which == 1) {
      // The other mesh has one axis 'w'.
      spec = spec.find_first_not_of("None, ") == std::string::npos ? "" : "w";
      if (shape.empty()) spec = "";
    }
    Host h;
    h.dt = t;
    h.shape = shape;
    const int64_t n = numel(shape);
    h.v = make_values(t, n);
    std::vector<unsigned char> bytes(static_cast<size_t>(n) * esize(t));
    for (size_t k = 0; k < h.v.size(); ++k) put_value(t, h.v[k], bytes.data() + k * esize(t));
    spmd_sharding *sh = nullptr;
    OPS_CHECK(spmd_sharding_named_text(mesh(which), spec.c_str(), &sh) == SPMD_OK,
              "spmd_sharding_named_text('%s') failed", spec.c_str());
    spmd_array *a = nullptr;
    const spmd_status st =
        spmd_array_from_host(sh, t, shape.size(), shape.data(),
                             bytes.empty() ? nullptr : bytes.data(), bytes.size(), &a);
    spmd_sharding_destroy(sh);
    if (kTrace) {
      std::string vals;
      for (size_t k = 0; k < h.v.size() && k < 24; ++k)
        vals += (k ? " " : "") + value_str(t, h.v[k]);
      trace("a%d = from_host(%s %s P(%s)%s [%s%s]) -> %s\n", s, dname(t), shape_str(shape).c_str(),
            spec.c_str(), which ? " on the other mesh" : "", vals.c_str(),
            h.v.size() > 24 ? " ..." : "", spmd_status_string(st));
    }
    if (!shape_ok(shape, t)) {
      // Past the bound on shapes: refused, and the slot stays empty.
      OPS_CHECK(st == SPMD_ERR_INVALID_ARGUMENT && fuzz::contains(spmd_last_error(), "shape"),
                "spmd_array_from_host took %s of %s, past 2^62 bytes", shape_str(shape).c_str(),
                dname(t));
      return;
    }
    OPS_CHECK(st == SPMD_OK, "spmd_array_from_host of %s %s failed", dname(t),
              shape_str(shape).c_str());
    slots[s].h = a;
    slots[s].live = true;
    slots[s].mesh = which;
    slots[s].host = std::move(h);
  }

  // An operand: one byte picks the slot and whether it is reused (when
  // live), made to `fit`, or made of a random shape.
  int operand(const Shape *fit) {
    const uint8_t b = in.byte();
    int s = b % kSlots;
    const unsigned mode = (b / kSlots) % 4;
    if (mode < 2 && (slots[s].live || slots[s].donated)) {
      busy.push_back(s);
      return s;
    }
    // A new array must not replace an operand of the same call.
    while (std::find(busy.begin(), busy.end(), s) != busy.end()) s = (s + 1) % kSlots;
    new_array(s, mode == 3 ? nullptr : fit);
    busy.push_back(s);
    return s;
  }

  // An axis byte: mostly in range (negative half the time), else just out.
  int64_t read_axis(size_t rank) {
    const uint8_t b = in.byte();
    const int64_t r = static_cast<int64_t>(rank);
    if (b % 16 == 15 || r == 0) return (b & 0x40) ? -r - 1 : r + b % 3;
    const int64_t a = (b / 16) % r;
    return (b & 0x80) ? a - r : a;
  }

  void run(Call &c);
  void check_result(const Call &c, spmd_array *r, const spmd_sharding *requested);
};

// Reads the options of a call (one byte: bits 0-1 an output sharding mode,
// bits 2-3 its kind, bit 7 with bits 4-6 a donation mask; then one spec
// byte per result dimension), makes it, and checks what came back.
void Program::run(Call &c) {
  Expect &e = c.e;
  const uint8_t o = in.byte();
  const int dest = in.byte() % kSlots;
  spmd_op_options opts = SPMD_OP_OPTIONS_INIT;
  // The operands: NULL and donated handles are refused, and so are two meshes.
  int mesh_id = -1;
  for (int s : c.operands) {
    if (slots[s].donated)
      e = invalid("an operand was donated");
    else if (!slots[s].live)
      e = invalid("a NULL operand");
    else if (mesh_id >= 0 && slots[s].mesh != mesh_id)
      e = invalid("operands on different meshes");
    else
      mesh_id = slots[s].mesh;
  }
  if (mesh_id < 0) mesh_id = 0;
  // The output sharding: on the operands' mesh, on the other mesh over
  // their devices, on a mesh of other devices (refused), or naming one
  // dimension too many (refused).
  spmd_sharding *requested = nullptr;
  int out_mesh = mesh_id;
  if ((o & 3) >= 2) {
    const size_t rank =
        e.computed ? std::min<size_t>(e.shape.size(), SPMD_MAX_NDIM) : in.byte() % 4;
    // No spec has more than SPMD_MAX_NDIM dimensions.
    const unsigned kind = ((o >> 2) & 3) == 3 && rank == SPMD_MAX_NDIM ? 0 : (o >> 2) & 3;
    const int which = kind == 1 ? 1 - mesh_id : kind == 2 ? 2 : mesh_id;
    const size_t dims = rank + (kind == 3 ? 1 : 0);
    std::string spec;
    if (which == 0) {
      spec = read_spec(dims);
    } else {
      // The other meshes have one axis, 'w'.
      spec = dims > 0 && (in.byte() & 1) ? "w" : "";
      for (size_t d = spec.empty() ? 0 : 1; d < dims && kind == 3; ++d)
        spec += spec.empty() ? "None" : ", None";
    }
    if (kind == 2 && e.verdict != Verdict::Invalid)
      e = invalid("an output sharding on other devices");
    if (kind == 3 && e.computed && e.verdict != Verdict::Invalid)
      e = invalid("an output sharding of more dimensions than the result");
    OPS_CHECK(spmd_sharding_named_text(mesh(which), spec.c_str(), &requested) == SPMD_OK,
              "spmd_sharding_named_text('%s') failed", spec.c_str());
    opts.out_sharding = requested;
    out_mesh = which;
    c.desc +=
        " out=P(" + spec + ")" + (which != mesh_id ? (which == 2 ? "@elsewhere" : "@other") : "");
  }
  // Donations.
  if (o & 0x80) {
    opts.donate = (o >> 4) & 7;
    if (opts.donate) {
      if (!c.donations) e = invalid("spmd_concatenate takes no donations");
      if (opts.donate >> c.operands.size()) e = invalid("a donation bit past the operands");
      for (size_t i = 0; i < c.operands.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          if ((opts.donate >> i & 1) && (opts.donate >> j & 1) && c.operands[i] == c.operands[j] &&
              e.verdict != Verdict::Invalid)
            e = invalid("one array donated twice");
      c.desc += " donate=" + std::to_string(opts.donate);
    }
  }
  // Results past the bound on shapes are refused; nothing too big is made.
  if (e.verdict != Verdict::Invalid && e.computed && !shape_ok(e.shape, e.dt))
    e = invalid("a result past 2^62 bytes or of more than SPMD_MAX_NDIM dimensions");
  if (e.verdict == Verdict::Valid && e.computed && e.shape.size() == SPMD_MAX_NDIM && c.combines &&
      skip_found("results of 8 dimensions whose partial sums are combined")) {
    spmd_sharding_destroy(requested);
    return;
  }
  if (e.verdict == Verdict::Valid && e.computed) {
    // An operand converted to the result's type (or to a float) first
    // may break the bound where the result does not.
    bool wide = false;
    for (int s : c.operands) {
      if (!slots[s].live) continue;
      const Host &h = slots[s].host;
      wide = wide || (c.promotes && !shape_ok(h.shape, promote(h.dt, e.dt))) ||
             (c.to_float && !shape_ok(h.shape, float_of(h.dt)));
    }
    if (wide && skip_found("an operand converted first breaks the bound on shapes")) {
      spmd_sharding_destroy(requested);
      return;
    }
  }
  if (e.verdict != Verdict::Invalid && e.computed && numel(e.shape) > kMaxElements) {
    spmd_sharding_destroy(requested);
    trace("  not run: a result of %lld elements\n", static_cast<long long>(numel(e.shape)));
    return;
  }
  g_call = c.desc;
  trace("%s  [reference: %s%s%s]\n", c.desc.c_str(),
        e.verdict == Verdict::Valid     ? "valid"
        : e.verdict == Verdict::Invalid ? "invalid"
                                        : "either",
        e.why.empty() ? "" : ", ", e.why.c_str());
#ifdef FUZZ_OPS_MXCSR
  const unsigned csr = _mm_getcsr();
#endif
  spmd_array *r = fuzz::sentinel<spmd_array>();
  spmd_clear_error();
  const spmd_status st = c.invoke(&opts, &r);
  trace("  -> %s%s%s\n", spmd_status_string(st), st ? ": " : "", st ? spmd_last_error() : "");
#ifdef FUZZ_OPS_MXCSR
  // The modes (flush, rounding, masks), not the sticky exception flags.
  OPS_CHECK((_mm_getcsr() & ~0x3fu) == (csr & ~0x3fu),
            "%s changed the caller's MXCSR from %#x to %#x", c.fn, csr, _mm_getcsr());
#endif
  fuzz::check_status(st, c.fn);
  if (st != SPMD_OK) {
    OPS_CHECK(r == fuzz::sentinel<spmd_array>(), "a failed %s wrote its output", c.fn);
    const std::string msg = spmd_last_error();
    const std::string head = std::string(c.fn) + ": ";
    OPS_CHECK(msg.compare(0, head.size(), head) == 0,
              "the message of a failed %s does not start with its name: \"%s\"", c.fn, msg.c_str());
    OPS_CHECK(names_an_argument(c.fn, msg.substr(head.size())),
              "the message of a failed %s does not name an argument: \"%s\"", c.fn, msg.c_str());
    OPS_CHECK(e.verdict != Verdict::Valid || st == SPMD_ERR_OUT_OF_MEMORY,
              "%s refused a valid call: %s", c.fn, msg.c_str());
    // The first operand that is not live, when donated, is refused naming
    // the op it went to (operands are checked in order, after `op`).
    for (int s : c.operands) {
      if (slots[s].live) continue;
      if (slots[s].donated && msg.compare(head.size(), 4, "op: ") != 0)
        OPS_CHECK(fuzz::contains(msg, "donated to " + slots[s].donated_to),
                  "%s refused donated a%d without naming %s: \"%s\"", c.fn, s,
                  slots[s].donated_to.c_str(), msg.c_str());
      break;
    }
    // Operands, donated or not, are as they were.
    for (int s : c.operands) {
      if (!slots[s].live) continue;
      const Host &h = slots[s].host;
      std::vector<unsigned char> got(h.v.size() * esize(h.dt)), want(got.size());
      for (size_t k = 0; k < h.v.size(); ++k)
        put_value(h.dt, h.v[k], want.data() + k * esize(h.dt));
      OPS_CHECK(
          spmd_array_to_host(slots[s].h, got.empty() ? nullptr : got.data(), got.size()) == SPMD_OK,
          "operand a%d of a refused %s is no longer usable", s, c.fn);
      // Bits of a NaN may differ from what this file encodes.
      for (size_t k = 0; k < h.v.size(); ++k) {
        const V g = get_value(h.dt, got.data() + k * esize(h.dt));
        OPS_CHECK(is_float(h.dt) ? (g.f == h.v[k].f || (std::isnan(g.f) && std::isnan(h.v[k].f)))
                                 : g.i == h.v[k].i,
                  "operand a%d of a refused %s changed at %zu", s, c.fn, k);
      }
    }
    spmd_sharding_destroy(requested);
    return;
  }
  OPS_CHECK(e.verdict != Verdict::Invalid, "%s accepted an invalid call (%s)", c.fn, e.why.c_str());
  OPS_CHECK(r != nullptr && r != fuzz::sentinel<spmd_array>(), "%s succeeded without an output",
            c.fn);
  // Donated operands are consumed and refused by name.
  for (size_t i = 0; i < c.operands.size(); ++i) {
    if (!(opts.donate >> i & 1)) continue;
    Slot &sl = slots[c.operands[i]];
    if (!sl.live) continue;
    spmd_dtype dt;
    const spmd_status ds = spmd_array_dtype(sl.h, &dt);
    OPS_CHECK(ds == SPMD_ERR_INVALID_ARGUMENT &&
                  fuzz::contains(spmd_last_error(), std::string("donated to ") + c.fn),
              "a%d, donated to %s, is still usable or not named (%s)", c.operands[i], c.fn,
              spmd_last_error());
    sl.live = false;
    sl.donated = true;
    sl.donated_to = c.fn;
  }
  check_result(c, r, requested);
  spmd_sharding_destroy(requested);
  // The result, as it came back, replaces the destination slot.
  Host h;
  h.dt = c.e.computed ? c.e.dt : SPMD_F32;
  spmd_array_dtype(r, &h.dt);
  size_t nd = 0;
  int64_t shp[SPMD_MAX_NDIM];
  spmd_array_shape(r, SPMD_MAX_NDIM, shp, &nd);
  h.shape.assign(shp, shp + nd);
  const int64_t n = numel(h.shape);
  if (n <= kMaxElements) {
    std::vector<unsigned char> bytes(static_cast<size_t>(n) * esize(h.dt));
    OPS_CHECK(
        spmd_array_to_host(r, bytes.empty() ? nullptr : bytes.data(), bytes.size()) == SPMD_OK,
        "to_host of the result of %s failed: %s", c.fn, spmd_last_error());
    for (int64_t k = 0; k < n; ++k) h.v.push_back(get_value(h.dt, bytes.data() + k * esize(h.dt)));
  }
  clear(dest);
  slots[dest].h = r;
  slots[dest].live = n <= kMaxElements;
  slots[dest].mesh = out_mesh == 2 ? 0 : out_mesh;
  slots[dest].host = std::move(h);
  if (!slots[dest].live) clear(dest);
}

void Program::check_result(const Call &c, spmd_array *r, const spmd_sharding *requested) {
  const Expect &e = c.e;
  spmd_dtype dt;
  OPS_CHECK(spmd_array_dtype(r, &dt) == SPMD_OK, "dtype of a result failed");
  size_t nd = 0;
  int64_t shp[SPMD_MAX_NDIM];
  OPS_CHECK(spmd_array_shape(r, SPMD_MAX_NDIM, shp, &nd) == SPMD_OK, "shape of a result failed");
  const Shape shape(shp, shp + nd);
  if (e.computed) {
    OPS_CHECK(dt == e.dt, "%s gave dtype %s, JAX's is %s", c.fn, dname(dt), dname(e.dt));
    OPS_CHECK(shape == e.shape, "%s gave shape %s, JAX's is %s", c.fn, shape_str(shape).c_str(),
              shape_str(e.shape).c_str());
  }
  spmd_sharding *got = nullptr;
  OPS_CHECK(spmd_array_sharding(r, &got) == SPMD_OK, "sharding of a result failed");
  if (requested != nullptr)
    OPS_CHECK(fuzz::shardings_equal(got, requested), "%s gave %s, not the requested %s", c.fn,
              fuzz::sharding_string(got).c_str(), fuzz::sharding_string(requested).c_str());
  Layout l;
  layout_of(got, l);
  size_t count = 0;
  OPS_CHECK(spmd_sharding_device_count(got, &count) == SPMD_OK, "device count failed");
  spmd_sharding_destroy(got);
  const int64_t n = numel(shape);
  const bool values = e.computed && e.values;
  const size_t es = esize(dt);
  std::vector<unsigned char> first(values ? static_cast<size_t>(n) * es : 0);
  std::vector<bool> seen(values ? static_cast<size_t>(n) : 0, false);
  std::vector<unsigned char> buf;
  size_t shards = 0;
  for (size_t i = 0;; ++i) {
    spmd_shard_info info = SPMD_SHARD_INFO_INIT;
    const spmd_status st = spmd_array_shard_info(r, i, &info);
    if (st == SPMD_ERR_OUT_OF_RANGE) break;
    OPS_CHECK(st == SPMD_OK, "shard_info(%zu) of a result failed", i);
    ++shards;
    // The ceil rule: dimension d split n ways has blocks of ceil(D/n).
    int64_t coords[8] = {0};
    size_t mnd = 0;
    OPS_CHECK(spmd_mesh_device_coords(l.mesh, info.device, 8, coords, &mnd) == SPMD_OK,
              "device %d of shard %zu is not on the result's mesh", info.device, i);
    Shape local(nd);
    for (size_t d = 0; d < nd; ++d) {
      int64_t parts = 1, index = 0;
      if (d < l.dims.size())
        for (const auto &a : l.dims[d])
          for (size_t k = 0; k < l.axis_names.size(); ++k)
            if (l.axis_names[k] == a) {
              parts *= l.axis_sizes[k];
              index = index * l.axis_sizes[k] + coords[k];
            }
      const int64_t D = shape[d];
      const __int128 cs = D / parts + (D % parts != 0);
      const int64_t lo = static_cast<int64_t>(std::min<__int128>(cs * index, D));
      const int64_t hi = static_cast<int64_t>(std::min<__int128>(cs * (index + 1), D));
      OPS_CHECK(info.start[d] == lo && info.stop[d] == hi,
                "shard %zu (device %d) of %s covers [%lld, %lld) of dimension %zu, the ceil rule "
                "gives [%lld, %lld)",
                i, info.device, shape_str(shape).c_str(), (long long)info.start[d],
                (long long)info.stop[d], d, (long long)lo, (long long)hi);
      local[d] = hi - lo;
    }
    if (!values) continue;
    const int64_t ln = numel(local);
    buf.assign(static_cast<size_t>(ln) * es, 0);
    OPS_CHECK(
        spmd_array_shard_read(r, i, buf.empty() ? nullptr : buf.data(), buf.size()) == SPMD_OK,
        "shard_read(%zu) of a result failed: %s", i, spmd_last_error());
    std::vector<int64_t> li(nd), gi(nd);
    for (int64_t k = 0; k < ln; ++k) {
      unravel(k, local, li.data());
      for (size_t d = 0; d < nd; ++d) gi[d] = info.start[d] + li[d];
      const size_t g = static_cast<size_t>(ravel(gi.data(), shape));
      const unsigned char *p = buf.data() + static_cast<size_t>(k) * es;
      if (seen[g]) {
        OPS_CHECK(std::memcmp(first.data() + g * es, p, es) == 0,
                  "replicas of element %zu of the result of %s differ (shard %zu, device %d)", g,
                  c.fn, i, info.device);
        continue;
      }
      seen[g] = true;
      std::memcpy(first.data() + g * es, p, es);
      const V v = get_value(dt, p);
      if (!matches(e, g, v)) {
        std::vector<int64_t> gidx(nd);
        unravel(static_cast<int64_t>(g), shape, gidx.data());
        std::string at;
        for (size_t d = 0; d < nd; ++d) at += (d ? ", " : "") + std::to_string(gidx[d]);
        OPS_CHECK(false, "%s: element [%s] is %s, JAX's is %s (allowed distance %g%s%s)", c.fn,
                  at.c_str(), value_str(dt, v).c_str(), value_str(dt, e.ref[g]).c_str(),
                  is_float(dt) ? e.tol[g] : 0.0, is_float(dt) ? "" : ", or ",
                  is_float(dt) ? "" : std::to_string(e.alt[g]).c_str());
      }
    }
  }
  OPS_CHECK(shards == count, "a result has %zu shards on %zu devices", shards, count);
  if (values)
    for (size_t g = 0; g < seen.size(); ++g)
      OPS_CHECK(seen[g], "element %zu of the result of %s is on no device", g, c.fn);
}

// ---- the ops: each reads its arguments, asks the reference, runs ----

std::string arr_name(int s) { return "a" + std::to_string(s); }

// Whether every operand holds a live array (else the call must be refused
// and the reference is not asked).
bool operands_live(const Program &p, const std::vector<int> &ops) {
  for (int s : ops)
    if (!p.slots[s].live) return false;
  return true;
}

// A shape that broadcasts with `s` (or, rarely, random): the same; its
// trailing part; it with some dimensions 1; a scalar.
Shape broadcast_partner(Program &p, const Shape &s) {
  const uint8_t b = p.in.byte();
  Shape t = s;
  switch (b % 4) {
    case 1: t.erase(t.begin(), t.begin() + static_cast<int64_t>((b / 4) % (s.size() + 1))); break;
    case 2:
      for (size_t d = 0; d < t.size(); ++d)
        if ((b >> (2 + d)) & 1) t[d] = 1;
      break;
    case 3: t.clear(); break;
    default: break;
  }
  return t;
}

void op_unary(Program &p) {
  const uint8_t ob = p.in.byte();
  const auto op = static_cast<spmd_unary_op>(ob % 16 == 15 ? 0 : 1 + ob % 13);
  Call c;
  c.fn = "spmd_unary";
  const int x = p.operand(nullptr);
  c.operands = {x};
  c.desc = std::string("unary(") + (op ? kUnaryNames[op] : "bad op") + ", " + arr_name(x) + ")";
  if (operands_live(p, c.operands)) {
    const Host &h = p.slots[x].host;
    c.e = ref_unary(op, h);
    if (has_huge_dim(h.shape) && skip_known("elementwise ops on empty arrays of huge dimensions"))
      return;
    if (op == SPMD_UNARY_ABS && h.dt == SPMD_BOOL && skip_found("abs of bool refused")) return;
    if (op == SPMD_UNARY_RELU && h.dt == SPMD_BOOL && skip_found("relu of bool refused")) return;
    if ((op == SPMD_UNARY_RSQRT || op == SPMD_UNARY_LOGISTIC) && !is_float(h.dt) &&
        skip_found("rsqrt and logistic of integers and bool accepted"))
      return;
  }
  spmd_array *xa = p.slots[x].h;
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) { return spmd_unary(op, xa, o, r); };
  p.run(c);
}

void op_astype(Program &p) {
  const uint8_t tb = p.in.byte();
  const spmd_dtype to = tb % 16 == 15 ? static_cast<spmd_dtype>(9 + tb % 2) : kDtypes[tb % 8];
  Call c;
  c.fn = "spmd_astype";
  const int x = p.operand(nullptr);
  c.operands = {x};
  c.desc = "astype(" + arr_name(x) + ", " + dname(to) + ")";
  if (operands_live(p, c.operands)) {
    const Host &h = p.slots[x].host;
    c.e = ref_astype(h, to);
    if (is_float(h.dt) && is_valid(to) && !is_float(to) && to != SPMD_BOOL) {
      bool out_of_range = false;
      for (const V &v : h.v) {
        const double lo = int_lo(to), hi = int_hi(to);
        out_of_range = out_of_range || !(std::trunc(v.f) >= lo && std::trunc(v.f) <= hi);
      }
      if (out_of_range && skip_known("astype of floats out of an integer type's range")) return;
    }
    if (has_huge_dim(h.shape) && skip_known("elementwise ops on empty arrays of huge dimensions"))
      return;
  }
  spmd_array *xa = p.slots[x].h;
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) { return spmd_astype(xa, to, o, r); };
  p.run(c);
}

// Whether promoting int operands to a 16-bit float type before the op
// (JAX) gives another value than converting them to f32 (libspmd).
bool int_to_half_differs(const Host &x, const Host &y, spmd_dtype t) {
  if (!(t == SPMD_F16 || t == SPMD_BF16)) return false;
  for (const Host *h : {&x, &y})
    if (!is_float(h->dt))
      for (const V &v : h->v)
        if (convert(h->dt, v, t).f != static_cast<double>(static_cast<float>(v.i))) return true;
  return false;
}

void op_binary(Program &p) {
  const uint8_t ob = p.in.byte();
  const unsigned v = ob % 16;
  const auto op = static_cast<spmd_binary_op>(v < 13 ? 1 + v : v == 15 ? 0 : 1 + (ob / 16) % 13);
  Call c;
  c.fn = "spmd_binary";
  c.promotes = true;
  const int x = p.operand(nullptr);
  const Shape fit = broadcast_partner(p, p.slots[x].host.shape);
  const int y = p.operand(&fit);
  c.operands = {x, y};
  c.desc = std::string("binary(") + (op >= 1 && op <= 13 ? kBinaryNames[op] : "bad op") + ", " +
           arr_name(x) + ", " + arr_name(y) + ")";
  if (operands_live(p, c.operands)) {
    const Host &hx = p.slots[x].host, &hy = p.slots[y].host;
    const spmd_dtype t = promote(hx.dt, hy.dt);
    c.e = ref_binary(op, hx, hy, t);
    if ((has_huge_dim(hx.shape) || has_huge_dim(hy.shape)) &&
        skip_known("elementwise ops on empty arrays of huge dimensions"))
      return;
    if (op == SPMD_BINARY_POW && t == SPMD_BOOL && skip_found("pow of bools gives f32, JAX int32"))
      return;
    if (op != SPMD_BINARY_MAX && op != SPMD_BINARY_MIN && int_to_half_differs(hx, hy, t) &&
        skip_found("integers meet 16-bit floats in f32, JAX in the 16-bit type"))
      return;
  }
  spmd_array *xa = p.slots[x].h, *ya = p.slots[y].h;
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) {
    return spmd_binary(op, xa, ya, o, r);
  };
  p.run(c);
}

void op_binary_scalar(Program &p) {
  const uint8_t ob = p.in.byte();
  const auto op = static_cast<spmd_binary_op>(1 + (ob & 0x7f) % 13);
  const bool first = ob & 0x80;  // s op x
  const double s = kScalars[p.in.byte() % std::size(kScalars)];
  Call c;
  c.fn = first ? "spmd_scalar_binary" : "spmd_binary_scalar";
  c.promotes = true;
  const int x = p.operand(nullptr);
  c.operands = {x};
  char sb[40];
  std::snprintf(sb, sizeof sb, "%.17g", s);
  c.desc = std::string(c.fn) + "(" + kBinaryNames[op] + ", " +
           (first ? std::string(sb) + ", " + arr_name(x) : arr_name(x) + ", " + sb) + ")";
  if (operands_live(p, c.operands)) {
    const Host &hx = p.slots[x].host;
    spmd_dtype t;
    if (!scalar_type(hx.dt, s, t)) {
      c.e = invalid("an integral scalar outside int32 (int64 beside int64)");
      if (hx.dt == SPMD_I64 && s >= 9223372036854775808.0 &&
          skip_found("2^63 is taken as fitting int64"))
        return;
    } else {
      const Host hs = scalar_host(t, s);
      c.e = first ? ref_binary(op, hs, hx, t) : ref_binary(op, hx, hs, t);
      // JAX: an integer array to a negative Python int power raises.
      if (op == SPMD_BINARY_POW && !first && !is_float(t) && s < 0 && c.e.verdict == Verdict::Valid)
        c.e.verdict = Verdict::Either;
    }
    if (has_huge_dim(hx.shape) && skip_known("elementwise ops on empty arrays of huge dimensions"))
      return;
  }
  spmd_array *xa = p.slots[x].h;
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) {
    return first ? spmd_scalar_binary(op, s, xa, o, r) : spmd_binary_scalar(op, xa, s, o, r);
  };
  p.run(c);
}

void op_where(Program &p) {
  Call c;
  c.fn = "spmd_where";
  c.promotes = true;
  const int k = p.operand(nullptr);
  const Shape fx = broadcast_partner(p, p.slots[k].host.shape);
  const int x = p.operand(&fx);
  const Shape fy = broadcast_partner(p, p.slots[k].host.shape);
  const int y = p.operand(&fy);
  c.operands = {k, x, y};
  c.desc = "where(" + arr_name(k) + ", " + arr_name(x) + ", " + arr_name(y) + ")";
  if (operands_live(p, c.operands)) {
    const Host &hc = p.slots[k].host, &hx = p.slots[x].host, &hy = p.slots[y].host;
    c.e = ref_where(hc, hx, hy);
    if (is_float(hc.dt)) {
      bool odd = false;
      for (const V &v : hc.v) odd = odd || !(std::fabs(v.f) >= 1 || v.f == 0) || std::isinf(v.f);
      if (odd && skip_known("where with a float condition that is NaN, infinite or in (-1, 1)"))
        return;
    }
    for (const Host *h : {&hc, &hx, &hy})
      if (has_huge_dim(h->shape) &&
          skip_known("elementwise ops on empty arrays of huge dimensions"))
        return;
  }
  spmd_array *ka = p.slots[k].h, *xa = p.slots[x].h, *ya = p.slots[y].h;
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) { return spmd_where(ka, xa, ya, o, r); };
  p.run(c);
}

void op_reduce(Program &p) {
  const uint8_t ob = p.in.byte();
  // An unknown op stays within the enum's bits (UBSan checks enum loads).
  const auto op = static_cast<spmd_reduce_op>(ob % 16 == 15 ? 7 * (ob >> 7) : 1 + ob % 4);
  const bool keep = ob & 0x40;
  Call c;
  c.fn = "spmd_reduce";
  c.combines = true;
  c.to_float = op == SPMD_REDUCE_MEAN;
  const int x = p.operand(nullptr);
  c.operands = {x};
  const size_t rank = p.slots[x].host.shape.size();
  // Axes: all (NULL), none (0 of a non-NULL list), or 1..3 axes.
  const uint8_t ab = p.in.byte();
  bool all = ab % 8 == 0;
  std::vector<int64_t> axes;
  if (ab % 8 >= 2)
    for (size_t k = 0, n = 1 + (ab / 8) % 3; k < n; ++k) axes.push_back(p.read_axis(rank));
  static const char *const kNames[] = {"?", "sum", "mean", "max", "min"};
  std::string ax = all ? "all" : "[";
  if (!all) {
    for (size_t k = 0; k < axes.size(); ++k) ax += (k ? ", " : "") + std::to_string(axes[k]);
    ax += "]";
  }
  c.desc = std::string("reduce(") + (op <= 4 ? kNames[op] : "bad op") + ", " + arr_name(x) + ", " +
           ax + (keep ? ", keepdims" : "") + ")";
  if (operands_live(p, c.operands)) {
    const Host &h = p.slots[x].host;
    c.e = ref_reduce(op, h, all, axes, keep);
    if (op == SPMD_REDUCE_MEAN && h.dt == SPMD_F16) {
      double mag = 0;
      for (const V &v : h.v) mag += std::isfinite(v.f) ? std::fabs(v.f) : 0;
      if (mag > max_finite(SPMD_F16) && skip_found("f16 means whose sum passes 65504 overflow"))
        return;
    }
    if ((op == SPMD_REDUCE_MAX || op == SPMD_REDUCE_MIN) &&
        (h.dt == SPMD_I32 || h.dt == SPMD_BOOL) && c.e.verdict == Verdict::Valid) {
      const Shape sp = splits_of(p.slots[x].h, rank);
      for (size_t d = 0; d < rank; ++d) {
        bool red = all;
        for (int64_t a : axes)
          red = red || a == static_cast<int64_t>(d) ||
                a + static_cast<int64_t>(rank) == static_cast<int64_t>(d);
        if (red && has_empty_block(h.shape[d], sp[d]) &&
            skip_known("int32 and bool max/min over a split dimension with an empty block"))
          return;
      }
    }
  }
  spmd_array *xa = p.slots[x].h;
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) {
    return spmd_reduce(op, xa, axes.size(), all ? nullptr : axes.data(), keep, o, r);
  };
  // axes.data() of an empty vector may be NULL: "none" needs a real list.
  static const int64_t kNone[1] = {0};
  if (!all && axes.empty())
    c.invoke = [=](const spmd_op_options *o, spmd_array **r) {
      return spmd_reduce(op, xa, 0, kNone, keep, o, r);
    };
  p.run(c);
}

void op_argmax(Program &p) {
  Call c;
  c.fn = "spmd_argmax";
  const int x = p.operand(nullptr);
  c.operands = {x};
  const int64_t axis = p.read_axis(p.slots[x].host.shape.size());
  c.desc = "argmax(" + arr_name(x) + ", " + std::to_string(axis) + ")";
  if (operands_live(p, c.operands)) c.e = ref_argmax(p.slots[x].host, axis);
  spmd_array *xa = p.slots[x].h;
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) { return spmd_argmax(xa, axis, o, r); };
  p.run(c);
}

void op_softmax(Program &p) {
  const bool log = p.in.byte() & 1;
  Call c;
  c.fn = "spmd_softmax";
  c.combines = true;
  c.to_float = true;
  const int x = p.operand(nullptr);
  c.operands = {x};
  const int64_t axis = p.read_axis(p.slots[x].host.shape.size());
  c.desc = std::string(log ? "log_softmax(" : "softmax(") + arr_name(x) + ", " +
           std::to_string(axis) + ")";
  if (operands_live(p, c.operands)) {
    const Host &h = p.slots[x].host;
    c.e = ref_softmax(h, axis, log);
    if (h.dt == SPMD_BOOL && skip_found("softmax of bool accepted")) return;
    if ((h.dt == SPMD_I32 || h.dt == SPMD_I64) && c.e.verdict == Verdict::Valid) {
      // JAX subtracts the max in the integer type; a float conversion
      // first loses what f32 (f64) cannot hold.
      const int bits = format(float_of(h.dt)).mant + 1;
      bool lossy = false;
      for (const V &v : h.v) {
        uint64_t a = v.i < 0 ? 0 - static_cast<uint64_t>(v.i) : static_cast<uint64_t>(v.i);
        while (a != 0 && (a & 1) == 0) a >>= 1;
        lossy = lossy || a >> bits != 0;
      }
      if (lossy && skip_found("softmax of integers converts before subtracting the max")) return;
    }
  }
  spmd_array *xa = p.slots[x].h;
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) {
    return spmd_softmax(xa, axis, log, o, r);
  };
  p.run(c);
}

// Whether a contraction of bool operands splits a contracting dimension
// (the known defect: int32 results or sums there).
bool bool_contraction_split(Program &p, int a, const std::vector<size_t> &ca, int b,
                            const std::vector<size_t> &cb) {
  if (promote(p.slots[a].host.dt, p.slots[b].host.dt) != SPMD_BOOL) return false;
  const Shape sa = splits_of(p.slots[a].h, p.slots[a].host.shape.size());
  const Shape sb = splits_of(p.slots[b].h, p.slots[b].host.shape.size());
  for (size_t d : ca)
    if (sa[d] > 1) return true;
  for (size_t d : cb)
    if (sb[d] > 1) return true;
  return false;
}

void op_dot_general(Program &p) {
  Call c;
  c.fn = "spmd_dot_general";
  c.combines = true;
  c.promotes = true;
  const int a = p.operand(nullptr);
  const Shape sa = p.slots[a].host.shape;
  const size_t ra = sa.size();
  const uint8_t nb_byte = p.in.byte(), nc_byte = p.in.byte(), free_byte = p.in.byte();
  const size_t nb = nb_byte % (ra + 1), nc = nc_byte % (ra - nb + 1);
  // The lhs dimensions, shuffled: batch ones first, then contracting ones.
  std::vector<int64_t> order(ra);
  for (size_t d = 0; d < ra; ++d) order[d] = static_cast<int64_t>(d);
  for (size_t d = ra; d > 1; --d) std::swap(order[d - 1], order[p.in.byte() % d]);
  const size_t rfree = free_byte % 3;
  const size_t rb = nb + nc + rfree;
  std::vector<int64_t> rorder(rb);
  for (size_t d = 0; d < rb; ++d) rorder[d] = static_cast<int64_t>(d);
  for (size_t d = rb; d > 1; --d) std::swap(rorder[d - 1], rorder[p.in.byte() % d]);
  Shape fit(rb);
  static const int64_t kFitDims[] = {1, 2, 3, 4, 0};
  for (size_t k = 0; k < rb; ++k) fit[k] = kFitDims[p.in.byte() % 5];
  std::vector<int64_t> lb(order.begin(), order.begin() + static_cast<int64_t>(nb)),
      lc(order.begin() + static_cast<int64_t>(nb), order.begin() + static_cast<int64_t>(nb + nc)),
      rbt(rorder.begin(), rorder.begin() + static_cast<int64_t>(nb)),
      rc(rorder.begin() + static_cast<int64_t>(nb), rorder.begin() + static_cast<int64_t>(nb + nc));
  for (size_t k = 0; k < nb; ++k) fit[static_cast<size_t>(rbt[k])] = sa[static_cast<size_t>(lb[k])];
  for (size_t k = 0; k < nc; ++k) fit[static_cast<size_t>(rc[k])] = sa[static_cast<size_t>(lc[k])];
  const int b = p.operand(&fit);
  c.operands = {a, b};
  // Now and then a dimension number goes wrong: negative, past the rank,
  // or repeated.
  const uint8_t bad = p.in.byte();
  if (bad % 8 == 7 && nb + nc > 0) {
    std::vector<int64_t> *lists[4] = {&lb, &lc, &rbt, &rc};
    std::vector<int64_t> &l = *lists[(bad / 8) % 4];
    if (!l.empty()) {
      const int64_t r = static_cast<int64_t>((bad / 8) % 4 < 2 ? ra : p.slots[b].host.shape.size());
      l[0] = (bad & 0x80) ? l[0] - r : (bad & 0x40) ? r : l.back();
      if (l.size() == 1 && !(bad & 0xc0)) l[0] = l[0] + r;  // out of range
    }
  }
  auto list = [](const std::vector<int64_t> &v) {
    std::string t = "[";
    for (size_t k = 0; k < v.size(); ++k) t += (k ? "," : "") + std::to_string(v[k]);
    return t + "]";
  };
  c.desc = "dot_general(" + arr_name(a) + ", " + arr_name(b) + ", batch " + list(lb) + list(rbt) +
           ", contract " + list(lc) + list(rc) + ")";
  if (operands_live(p, c.operands)) {
    const Host &ha = p.slots[a].host, &hb = p.slots[b].host;
    const size_t rr = hb.shape.size();
    // Labels: lhs dimension d is d; rhs dimensions paired with one take its label.
    std::vector<int> la(ra), lbl(rr, -1), lo;
    std::vector<int64_t> size;
    for (size_t d = 0; d < ra; ++d) la[d] = static_cast<int>(d), size.push_back(ha.shape[d]);
    bool negative = false;
    std::string why;
    auto check = [&](std::vector<int64_t> &dims, size_t rank, std::vector<bool> &used) {
      for (int64_t &d : dims) {
        size_t n;
        if (!norm_axis(d, rank, n)) return why = "a dimension number out of range", false;
        negative = negative || d < 0;
        if (used[n]) return why = "a dimension named twice", false;
        used[n] = true;
      }
      return true;
    };
    std::vector<int64_t> nlb = lb, nlc = lc, nrb = rbt, nrc = rc;
    std::vector<bool> ul(ra, false), ur(rr, false);
    bool ok = check(nlb, ra, ul) && check(nlc, ra, ul) && check(nrb, rr, ur) && check(nrc, rr, ur);
    if (ok) {
      for (int64_t &d : nlb) d = d < 0 ? d + static_cast<int64_t>(ra) : d;
      for (int64_t &d : nlc) d = d < 0 ? d + static_cast<int64_t>(ra) : d;
      for (int64_t &d : nrb) d = d < 0 ? d + static_cast<int64_t>(rr) : d;
      for (int64_t &d : nrc) d = d < 0 ? d + static_cast<int64_t>(rr) : d;
      for (size_t k = 0; k < nb && ok; ++k) {
        ok = ha.shape[static_cast<size_t>(nlb[k])] == hb.shape[static_cast<size_t>(nrb[k])];
        lbl[static_cast<size_t>(nrb[k])] = static_cast<int>(nlb[k]);
      }
      for (size_t k = 0; k < nc && ok; ++k) {
        ok = ha.shape[static_cast<size_t>(nlc[k])] == hb.shape[static_cast<size_t>(nrc[k])];
        lbl[static_cast<size_t>(nrc[k])] = static_cast<int>(nlc[k]);
      }
      if (!ok) why = "paired dimensions of different sizes";
    }
    if (!ok) {
      c.e = invalid(why);
    } else {
      for (size_t d = 0; d < rr; ++d)
        if (lbl[d] < 0) lbl[d] = static_cast<int>(size.size()), size.push_back(hb.shape[d]);
      for (int64_t d : nlb) lo.push_back(static_cast<int>(d));
      for (size_t d = 0; d < ra; ++d)
        if (!ul[d]) lo.push_back(static_cast<int>(d));
      for (size_t d = 0; d < rr; ++d)
        if (!ur[d]) lo.push_back(lbl[d]);
      c.e = ref_contract(ha, la, hb, lbl, lo, size);
      // JAX takes no negative dimension numbers; libspmd counts them from the end.
      if (negative && c.e.verdict == Verdict::Valid) c.e.verdict = Verdict::Either;
      if (lo.size() > SPMD_MAX_NDIM && skip_known("dot_general results of more than 8 dimensions"))
        return;
      std::vector<size_t> ca, cb;
      for (int64_t d : nlc) ca.push_back(static_cast<size_t>(d));
      for (int64_t d : nrc) cb.push_back(static_cast<size_t>(d));
      if (bool_contraction_split(p, a, ca, b, cb) &&
          skip_known("bool contractions over a split dimension"))
        return;
    }
  }
  spmd_array *aa = p.slots[a].h, *ba = p.slots[b].h;
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) {
    spmd_dot_dims dd = SPMD_DOT_DIMS_INIT;
    dd.nbatch = lb.size();
    dd.lhs_batch = lb.data();
    dd.rhs_batch = rbt.data();
    dd.ncontract = lc.size();
    dd.lhs_contract = lc.data();
    dd.rhs_contract = rc.data();
    return spmd_dot_general(aa, ba, &dd, o, r);
  };
  p.run(c);
}

void op_matmul(Program &p) {
  Call c;
  c.fn = "spmd_matmul";
  c.combines = true;
  c.promotes = true;
  const int a = p.operand(nullptr);
  const Shape sa = p.slots[a].host.shape;
  // b fits a as jnp.matmul takes it: (k), (k, n) or a's batch then (k, n).
  const uint8_t fb = p.in.byte(), nb = p.in.byte();
  Shape fit;
  static const int64_t kFitDims[] = {1, 2, 3, 4, 0};
  const int64_t k = sa.empty() ? 1 + fb % 3 : sa.back(), n = kFitDims[nb % 5];
  switch (fb % 3) {
    case 0: fit = {k}; break;
    case 1: fit = {k, n}; break;
    default:
      fit.assign(sa.begin(), sa.end() - (sa.size() >= 2 ? 2 : sa.size()));
      fit.push_back(k);
      fit.push_back(n);
      break;
  }
  const int b = p.operand(&fit);
  c.operands = {a, b};
  c.desc = "matmul(" + arr_name(a) + ", " + arr_name(b) + ")";
  if (operands_live(p, c.operands)) {
    const Host &ha = p.slots[a].host, &hb = p.slots[b].host;
    const size_t ra = ha.shape.size(), rb = hb.shape.size();
    if (ra == 0 || rb == 0) {
      c.e = invalid("matmul of a zero-dimensional array");
    } else {
      const int64_t ka = ha.shape[ra - 1], kb = hb.shape[rb == 1 ? 0 : rb - 2];
      if (ka != kb) {
        c.e = invalid("inner dimensions differ");
      } else if (rb > 2 && (ra != rb ||
                            !std::equal(ha.shape.begin(), ha.shape.end() - 2, hb.shape.begin()))) {
        c.e = either("batch dimensions that are not equal (JAX broadcasts them)");
      } else {
        // Labels: a's dimensions 0..ra-1 (the last is K); b's batch take a's.
        std::vector<int> la(ra), lbl(rb), lo;
        std::vector<int64_t> size(ha.shape.begin(), ha.shape.end());
        for (size_t d = 0; d < ra; ++d) la[d] = static_cast<int>(d);
        const int K = static_cast<int>(ra - 1);
        if (rb == 1) {
          lbl = {K};
        } else {
          for (size_t d = 0; d + 2 < rb; ++d) lbl[d] = static_cast<int>(d);
          lbl[rb - 2] = K;
          lbl[rb - 1] = static_cast<int>(size.size());
          size.push_back(hb.shape[rb - 1]);
        }
        for (size_t d = 0; d + 1 < ra; ++d) lo.push_back(static_cast<int>(d));
        if (rb >= 2) lo.push_back(lbl[rb - 1]);
        c.e = ref_contract(ha, la, hb, lbl, lo, size);
        // spmd/ops.h promises operands of 1 or 2 dimensions, equal batch
        // dimensions, or a batched a with a 2-dimensional b.
        if (ra > 2 && rb == 1 && c.e.verdict == Verdict::Valid) c.e.verdict = Verdict::Either;
        if (bool_contraction_split(p, a, {ra - 1}, b, {rb == 1 ? 0 : rb - 2}) &&
            skip_known("bool contractions over a split dimension"))
          return;
      }
    }
  }
  spmd_array *aa = p.slots[a].h, *ba = p.slots[b].h;
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) { return spmd_matmul(aa, ba, o, r); };
  p.run(c);
}

// An einsum equation read as JAX reads it: two operands and an output.
struct Equation {
  bool form = false;  // "A,B->C" with letters and spaces only
  std::string a, b, out;
};

Equation parse_equation(const std::string &s) {
  Equation e;
  const auto arrow = s.find("->");
  const auto comma = s.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow) return e;
  if (s.find(',', comma + 1) != std::string::npos || s.find("->", arrow + 2) != std::string::npos)
    return e;
  auto letters = [](const std::string &t, std::string &out) {
    for (char ch : t) {
      if (ch == ' ') continue;
      if (!std::isalpha(static_cast<unsigned char>(ch))) return false;
      out += ch;
    }
    return true;
  };
  e.form = letters(s.substr(0, comma), e.a) &&
           letters(s.substr(comma + 1, arrow - comma - 1), e.b) &&
           letters(s.substr(arrow + 2), e.out);
  return e;
}

// An operand with its lone labels (`lone`: dimensions no other operand nor
// the output names) summed away in the promoted type `t`, as jnp.einsum
// sums them before it contracts: so 1232 * inf and -1.5 * inf are not
// added, but (1232 - 1.5) * inf is taken. Floats are added exactly and
// rounded to t once (the tolerance comes from the joint sum), integers
// wrap in t, bools or.
Host sum_lone(const Host &h, const std::vector<int> &labels, const std::vector<bool> &lone,
              spmd_dtype t, std::vector<int> &kept_labels) {
  Host r;
  r.dt = t;
  std::vector<size_t> kept;
  for (size_t d = 0; d < labels.size(); ++d)
    if (!lone[d]) {
      kept.push_back(d);
      kept_labels.push_back(labels[d]);
      r.shape.push_back(h.shape[d]);
    }
  const int64_t n = numel(r.shape);
  std::vector<double> fs(static_cast<size_t>(n), 0.0);
  std::vector<int64_t> is(static_cast<size_t>(n), 0);
  std::vector<int64_t> idx(h.shape.size()), ridx(kept.size());
  for (int64_t k = 0; k < numel(h.shape); ++k) {
    unravel(k, h.shape, idx.data());
    for (size_t j = 0; j < kept.size(); ++j) ridx[j] = idx[kept[j]];
    const auto o = static_cast<size_t>(ravel(ridx.data(), r.shape));
    const V v = convert(h.dt, h.v[static_cast<size_t>(k)], t);
    if (is_float(t)) fs[o] += v.f;
    else if (t == SPMD_BOOL) is[o] |= v.i;
    else is[o] = wrap_add(is[o], v.i);
  }
  r.v.resize(static_cast<size_t>(n));
  for (size_t o = 0; o < r.v.size(); ++o) {
    if (is_float(t)) r.v[o].f = round_to(t, fs[o]);
    else r.v[o].i = t == SPMD_BOOL ? is[o] : wrap_to(t, is[o]);
  }
  return r;
}

// ref_contract for jnp.einsum: the values with lone labels summed first,
// the tolerance that of the joint sum (which bounds both orders).
Expect ref_einsum(const Host &a, const std::vector<int> &la, const Host &b,
                  const std::vector<int> &lb, const std::vector<int> &lo,
                  const std::vector<int64_t> &size) {
  auto lone_of = [&](const std::vector<int> &mine, const std::vector<int> &other) {
    std::vector<bool> lone(mine.size(), false);
    bool any = false;
    for (size_t d = 0; d < mine.size(); ++d) {
      const int l = mine[d];
      lone[d] = std::find(other.begin(), other.end(), l) == other.end() &&
                std::find(lo.begin(), lo.end(), l) == lo.end();
      any = any || lone[d];
    }
    return std::make_pair(lone, any);
  };
  const auto [lone_a, any_a] = lone_of(la, lb);
  const auto [lone_b, any_b] = lone_of(lb, la);
  Expect joint = ref_contract(a, la, b, lb, lo, size);
  if ((!any_a && !any_b) || joint.verdict != Verdict::Valid || !joint.values) return joint;
  const spmd_dtype t = promote(a.dt, b.dt);
  std::vector<int> ka, kb;
  const Host ra = sum_lone(a, la, lone_a, t, ka), rb = sum_lone(b, lb, lone_b, t, kb);
  Expect e = ref_contract(ra, ka, rb, kb, lo, size);
  if (!e.values) return joint;
  for (size_t k = 0; k < e.tol.size(); ++k)
    if (is_float(t) && std::isfinite(e.ref[k].f))
      e.tol[k] = joint.tol[k] < 0 ? -1 : std::max(e.tol[k], joint.tol[k]);
  return e;
}

void op_einsum(Program &p) {
  // The equation: text from the input up to a newline (at most 24 bytes).
  std::string eq;
  for (int k = 0; k < 24; ++k) {
    const uint8_t ch = p.in.byte();
    if (ch == '\n' || p.in.empty()) {
      if (ch != '\n' && ch) eq += static_cast<char>(ch);
      break;
    }
    eq += static_cast<char>(ch);
  }
  eq = fuzz::c_text(eq);
  const Equation q = parse_equation(eq);
  // Operands fit the letters: one size byte per distinct letter.
  std::map<char, int64_t> letter_size;
  auto shape_of = [&](const std::string &s) {
    Shape sh;
    for (char ch : s) {
      if (!letter_size.count(ch)) letter_size[ch] = p.in.byte() % 4;
      sh.push_back(letter_size[ch] == 3 ? 0 : 1 + letter_size[ch]);
    }
    return sh;
  };
  Call c;
  c.fn = "spmd_einsum";
  c.combines = true;
  c.promotes = true;
  const Shape fa = shape_of(q.a);
  const int a = p.operand(q.form ? &fa : nullptr);
  const Shape fb = shape_of(q.b);
  const int b = p.operand(q.form ? &fb : nullptr);
  c.operands = {a, b};
  c.desc = "einsum(\"" + eq + "\", " + arr_name(a) + ", " + arr_name(b) + ")";
  if (operands_live(p, c.operands)) {
    const Host &ha = p.slots[a].host, &hb = p.slots[b].host;
    if (!q.form) {
      // JAX also takes an implicit output, ellipses and more operands;
      // spmd/ops.h promises only the explicit two-operand form.
      c.e = either("not of the form 'ab,bc->ac'");
      const bool arrow = eq.find("->") != std::string::npos;
      if (arrow && eq.find(',') != std::string::npos && eq.find("...") == std::string::npos &&
          eq.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ,->") !=
              std::string::npos)
        c.e = invalid("characters that name no dimension");
    } else {
      auto repeats = [](const std::string &s) {
        for (size_t k = 0; k < s.size(); ++k)
          if (s.find(s[k], k + 1) != std::string::npos) return true;
        return false;
      };
      std::map<char, int> label;
      std::vector<int64_t> size;
      std::string why;
      bool ok = true, loose = false;
      if (q.a.size() != ha.shape.size() || q.b.size() != hb.shape.size())
        ok = false, why = "ranks differ from the subscripts";
      if (ok && repeats(q.out)) ok = false, why = "an output letter repeats";
      if (ok && (repeats(q.a) || repeats(q.b))) loose = true, why = "a trace or diagonal";
      std::vector<int> la, lb, lo;
      auto take = [&](const std::string &s, const Shape &sh, std::vector<int> &l) {
        for (size_t d = 0; d < s.size() && ok; ++d) {
          auto it = label.find(s[d]);
          if (it == label.end()) {
            label[s[d]] = static_cast<int>(size.size());
            size.push_back(sh[d]);
            l.push_back(static_cast<int>(size.size() - 1));
          } else {
            if (size[static_cast<size_t>(it->second)] != sh[d]) {
              // JAX broadcasts a letter of size 1.
              if (size[static_cast<size_t>(it->second)] == 1 || sh[d] == 1)
                loose = true, why = "a letter of size 1 against another size";
              else
                ok = false, why = "a letter of two sizes";
            }
            l.push_back(it->second);
          }
        }
      };
      if (ok) take(q.a, ha.shape, la);
      if (ok) take(q.b, hb.shape, lb);
      for (size_t d = 0; ok && d < q.out.size(); ++d) {
        auto it = label.find(q.out[d]);
        if (it == label.end())
          ok = false, why = "an output letter names no operand dimension";
        else
          lo.push_back(it->second);
      }
      if (!ok)
        c.e = invalid(why);
      else if (loose)
        c.e = either(why);
      else {
        c.e = ref_einsum(ha, la, hb, lb, lo, size);
        if (lo.size() > SPMD_MAX_NDIM && skip_known("einsum results of more than 8 dimensions"))
          return;
        std::vector<size_t> ca, cb;
        for (size_t d = 0; d < q.a.size(); ++d)
          if (q.out.find(q.a[d]) == std::string::npos) ca.push_back(d);
        for (size_t d = 0; d < q.b.size(); ++d)
          if (q.out.find(q.b[d]) == std::string::npos) cb.push_back(d);
        if (bool_contraction_split(p, a, ca, b, cb) &&
            skip_known("bool contractions over a split dimension"))
          return;
        // A letter in one operand only and not in the output is summed
        // first: JAX keeps the operands' type there (bool: or).
        bool alone = false;
        for (char ch : q.a)
          alone =
              alone || (q.b.find(ch) == std::string::npos && q.out.find(ch) == std::string::npos);
        for (char ch : q.b)
          alone =
              alone || (q.a.find(ch) == std::string::npos && q.out.find(ch) == std::string::npos);
        if (alone && (is_unsigned(promote(ha.dt, hb.dt)) || ha.dt != hb.dt) &&
            skip_found("einsum sums a lone letter in another type than JAX"))
          return;
      }
    }
  }
  spmd_array *aa = p.slots[a].h, *ba = p.slots[b].h;
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) {
    return spmd_einsum(eq.c_str(), aa, ba, o, r);
  };
  p.run(c);
}

void op_transpose(Program &p) {
  Call c;
  c.fn = "spmd_transpose";
  const int x = p.operand(nullptr);
  c.operands = {x};
  const size_t rank = p.slots[x].host.shape.size();
  const uint8_t mode = p.in.byte();
  std::vector<int64_t> perm;
  if (mode % 4 != 0) {
    for (size_t d = 0; d < rank; ++d) perm.push_back(static_cast<int64_t>(d));
    for (size_t d = rank; d > 1; --d) std::swap(perm[d - 1], perm[p.in.byte() % d]);
    for (auto &v : perm)
      if (mode & 0x10) v -= static_cast<int64_t>(rank);  // negative axes count from the end
    if (mode % 4 == 3 && !perm.empty()) {
      // Broken: a repeat, a value out of range, or one axis too many.
      if (mode & 0x20)
        perm.push_back(0);
      else
        perm[0] = (mode & 0x40) ? static_cast<int64_t>(rank) : perm.back();
    }
  }
  std::string ps = "[";
  for (size_t k = 0; k < perm.size(); ++k) ps += (k ? "," : "") + std::to_string(perm[k]);
  c.desc = "transpose(" + arr_name(x) + ", " +
           (mode % 4 == 0 ? std::string("reversed") : ps + "]") + ")";
  if (operands_live(p, c.operands)) {
    const Host &h = p.slots[x].host;
    std::vector<size_t> pm;
    bool ok = true;
    if (perm.empty() && mode % 4 == 0) {
      for (size_t d = rank; d-- > 0;) pm.push_back(d);
    } else if (perm.size() != rank) {
      ok = false;
    } else {
      std::vector<bool> used(rank, false);
      for (int64_t v : perm) {
        size_t n;
        if (!norm_axis(v, rank, n) || used[n])
          ok = false;
        else
          used[n] = true, pm.push_back(n);
      }
    }
    if (!ok) {
      c.e = invalid("not a permutation of the dimensions");
    } else {
      Shape out;
      for (size_t d : pm) out.push_back(h.shape[d]);
      c.e.init(h.dt, out);
      std::vector<int64_t> oi(rank), ii(rank);
      for (size_t k = 0; k < c.e.ref.size(); ++k) {
        unravel(static_cast<int64_t>(k), out, oi.data());
        for (size_t d = 0; d < rank; ++d) ii[pm[d]] = oi[d];
        c.e.ref[k] = h.v[static_cast<size_t>(ravel(ii.data(), h.shape))];
        c.e.alt[k] = c.e.ref[k].i;
      }
    }
  }
  spmd_array *xa = p.slots[x].h;
  const bool reversed = mode % 4 == 0;
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) {
    return spmd_transpose(xa, reversed ? 0 : perm.size(),
                          reversed || perm.empty() ? nullptr : perm.data(), o, r);
  };
  p.run(c);
}

// Copies x's values row-major into a result of another shape.
Expect same_values(const Host &x, const Shape &shape) {
  Expect e;
  e.init(x.dt, shape);
  for (size_t k = 0; k < e.ref.size(); ++k) {
    e.ref[k] = x.v[k];
    e.alt[k] = x.v[k].i;
  }
  return e;
}

void op_reshape(Program &p) {
  Call c;
  c.fn = "spmd_reshape";
  const int x = p.operand(nullptr);
  c.operands = {x};
  const Shape xs = p.slots[x].host.shape;
  const int64_t n = numel(xs);
  const uint8_t mode = p.in.byte();
  Shape shape;
  switch (mode % 6) {
    case 0: shape = {-1}; break;
    case 1:
    case 2: {
      // A factorisation of n (a 0 somewhere when n is 0), maybe with a -1.
      const size_t nd = (mode / 8) % 5;
      int64_t left = n;
      for (size_t d = 0; d + 1 < nd; ++d) {
        std::vector<int64_t> divs;
        for (int64_t f = 1; f <= std::min<int64_t>(left, 12); ++f)
          if (left % f == 0) divs.push_back(f);
        const int64_t f = n == 0         ? p.in.byte() % 4
                          : divs.empty() ? 1
                                         : divs[p.in.byte() % divs.size()];
        shape.push_back(f);
        if (n != 0) left /= f;
      }
      if (nd > 0)
        shape.push_back(
            n == 0
                ? (shape.empty() || std::find(shape.begin(), shape.end(), 0) == shape.end() ? 0 : 2)
                : left);
      if (mode & 0x80 && !shape.empty()) shape[p.in.byte() % shape.size()] = -1;
      break;
    }
    case 3: {
      // Any small shape (mostly of another size).
      shape.resize(p.in.byte() % 4);
      for (auto &d : shape) d = p.in.byte() % 7 - ((mode & 0x40) ? 1 : 0);
      break;
    }
    case 4: {
      // Huge dimensions, whose product overflows int64 or is 0.
      static const Shape kShapes[] = {{int64_t{1} << 32, int64_t{1} << 32},
                                      {int64_t{1} << 32, int64_t{1} << 32, 0},
                                      {0, int64_t{1} << 62},
                                      {INT64_MAX, 2, 0},
                                      {-1, int64_t{1} << 62},
                                      {int64_t{1} << 62, 4},
                                      {0, -1},
                                      {3, -1, INT64_MAX}};
      shape = kShapes[p.in.byte() % 8];
      break;
    }
    default:
      // More dimensions than SPMD_MAX_NDIM (or exactly as many).
      shape.assign(8 + (mode / 8) % 2, 1);
      if (n != 1) shape[0] = -1;
      break;
  }
  c.desc = "reshape(" + arr_name(x) + ", " + shape_str(shape) + ")";
  if (operands_live(p, c.operands)) {
    const Host &h = p.slots[x].host;
    // The checks as NumPy makes them, in exact arithmetic.
    Shape out = shape;
    int infer = -1;
    unsigned __int128 known = 1;
    bool ok = shape.size() <= SPMD_MAX_NDIM, zero = false, overflow = false;
    for (size_t d = 0; d < shape.size() && ok; ++d) {
      if (shape[d] == -1) {
        if (infer >= 0) ok = false;
        infer = static_cast<int>(d);
      } else if (shape[d] < 0) {
        ok = false;
      } else {
        zero = zero || shape[d] == 0;
        if (!overflow) {
          known *= static_cast<unsigned __int128>(shape[d]);
          if (known > (static_cast<unsigned __int128>(1) << 64)) overflow = true;
        }
      }
    }
    if (zero) known = 0, overflow = false;
    if (ok && infer >= 0) {
      if (known == 0 || overflow || static_cast<unsigned __int128>(n) % known != 0)
        ok = false;
      else
        out[static_cast<size_t>(infer)] =
            static_cast<int64_t>(static_cast<unsigned __int128>(n) / known);
    } else if (ok) {
      ok = !overflow && known == static_cast<unsigned __int128>(n);
    }
    c.e = ok ? same_values(h, out) : invalid("another number of elements, or a bad shape");
    for (int64_t d : shape)
      if ((d > (int64_t{1} << 31) || overflow) && skip_known("reshape's element count overflows"))
        return;
  }
  spmd_array *xa = p.slots[x].h;
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) {
    return spmd_reshape(xa, shape.size(), shape.empty() ? nullptr : shape.data(), o, r);
  };
  p.run(c);
}

void op_broadcast_to(Program &p) {
  Call c;
  c.fn = "spmd_broadcast_to";
  const int x = p.operand(nullptr);
  c.operands = {x};
  const Shape xs = p.slots[x].host.shape;
  const uint8_t mode = p.in.byte();
  Shape shape;
  if (mode % 8 == 6) {
    // Huge: dimensions past 2^62 elements, or huge beside a 0.
    static const Shape kShapes[] = {
        {int64_t{1} << 62, 4}, {INT64_MAX, INT64_MAX}, {0, int64_t{1} << 62}, {0, INT64_MAX, 2}};
    shape = kShapes[p.in.byte() % 4];
    shape.insert(shape.end(), xs.begin(), xs.end());
  } else if (mode % 8 == 7) {
    shape.assign(9, 1);  // more than SPMD_MAX_NDIM
  } else {
    // New leading dimensions and size-1 dimensions grown (or, with bit 7,
    // one dimension changed).
    for (size_t k = 0, lead = (mode / 8) % 3; k < lead; ++k) shape.push_back(p.in.byte() % 4);
    for (int64_t d : xs) shape.push_back(d == 1 ? p.in.byte() % 4 : d);
    if ((mode & 0x80) && !shape.empty()) shape[p.in.byte() % shape.size()] = p.in.byte() % 6 - 1;
  }
  c.desc = "broadcast_to(" + arr_name(x) + ", " + shape_str(shape) + ")";
  if (operands_live(p, c.operands)) {
    const Host &h = p.slots[x].host;
    bool ok = shape.size() <= SPMD_MAX_NDIM && shape.size() >= h.shape.size();
    for (int64_t d : shape) ok = ok && d >= 0;
    for (size_t d = 0; ok && d < h.shape.size(); ++d) {
      const int64_t want = shape[shape.size() - h.shape.size() + d];
      ok = h.shape[d] == want || h.shape[d] == 1;
    }
    if (!ok) {
      c.e = invalid("a shape x does not broadcast to");
    } else {
      c.e.init(h.dt, shape);
      std::vector<int64_t> idx(shape.size());
      for (size_t k = 0; k < c.e.ref.size(); ++k) {
        unravel(static_cast<int64_t>(k), shape, idx.data());
        c.e.ref[k] = h.v[static_cast<size_t>(broadcast_index(idx.data(), shape.size(), h.shape))];
        c.e.alt[k] = c.e.ref[k].i;
      }
      if (has_huge_dim(shape) && numel(shape) == 0 &&
          skip_known("elementwise ops on empty arrays of huge dimensions"))
        return;
    }
  }
  spmd_array *xa = p.slots[x].h;
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) {
    return spmd_broadcast_to(xa, shape.size(), shape.empty() ? nullptr : shape.data(), o, r);
  };
  p.run(c);
}

void op_slice(Program &p) {
  Call c;
  c.fn = "spmd_slice";
  const int x = p.operand(nullptr);
  c.operands = {x};
  const Shape xs = p.slots[x].host.shape;
  const uint8_t mode = p.in.byte();
  std::vector<int64_t> lo(xs.size()), hi(xs.size());
  for (size_t d = 0; d < xs.size(); ++d) {
    const uint8_t a = p.in.byte(), b = p.in.byte();
    const int64_t n = xs[d];
    if (n > 1000) {
      lo[d] = a % 2 ? n - a % 5 : a % 5;
      hi[d] = std::min<int64_t>(n, lo[d] + b % 5);
    } else {
      lo[d] = a % (n + 1);
      hi[d] = lo[d] + b % (n - lo[d] + 1);
    }
  }
  size_t ndim = xs.size();
  if (mode % 8 == 7) {
    // Broken: a start past the stop, a stop past the size, a negative
    // start, or one dimension too many.
    const unsigned how = (mode / 8) % 4;
    if (how == 3 || xs.empty()) {
      ndim += 1;
      lo.push_back(0);
      hi.push_back(1);
    } else {
      const size_t d = (mode / 32) % xs.size();
      if (how == 0)
        lo[d] = hi[d] + 1;
      else if (how == 1)
        hi[d] = xs[d] + 1;
      else
        lo[d] = -1;
    }
  }
  std::string ds;
  for (size_t d = 0; d < ndim; ++d)
    ds += (d ? ", " : "") + std::to_string(lo[d]) + ":" + std::to_string(hi[d]);
  c.desc = "slice(" + arr_name(x) + ", [" + ds + "])";
  if (operands_live(p, c.operands)) {
    const Host &h = p.slots[x].host;
    bool ok = ndim == h.shape.size();
    Shape out(h.shape.size());
    for (size_t d = 0; ok && d < ndim; ++d) {
      ok = lo[d] >= 0 && lo[d] <= h.shape[d] && hi[d] >= lo[d] && hi[d] <= h.shape[d];
      out[d] = hi[d] - lo[d];
    }
    if (!ok) {
      c.e = invalid("indices out of range");
    } else {
      c.e.init(h.dt, out);
      std::vector<int64_t> oi(out.size());
      for (size_t k = 0; k < c.e.ref.size(); ++k) {
        unravel(static_cast<int64_t>(k), out, oi.data());
        for (size_t d = 0; d < out.size(); ++d) oi[d] += lo[d];
        c.e.ref[k] = h.v[static_cast<size_t>(ravel(oi.data(), h.shape))];
        c.e.alt[k] = c.e.ref[k].i;
      }
    }
  }
  spmd_array *xa = p.slots[x].h;
  // start and stop are never NULL (even for ndim 0).
  lo.push_back(0);
  hi.push_back(0);
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) {
    return spmd_slice(xa, ndim, lo.data(), hi.data(), o, r);
  };
  p.run(c);
}

void op_concatenate(Program &p) {
  Call c;
  c.fn = "spmd_concatenate";
  c.promotes = true;
  const uint8_t nb = p.in.byte();
  const size_t n = nb % 8 == 7 ? 0 : 1 + nb % 3;
  const int x = n ? p.operand(nullptr) : -1;
  const Shape xs = n ? p.slots[x].host.shape : Shape{};
  const int64_t axis = p.read_axis(xs.size());
  if (n) c.operands.push_back(x);
  for (size_t k = 1; k < n; ++k) {
    Shape fit = xs;
    size_t a;
    if (norm_axis(axis, xs.size(), a)) fit[a] = p.in.byte() % 4;
    c.operands.push_back(p.operand(&fit));
  }
  c.donations = false;
  c.desc = "concatenate([";
  for (size_t k = 0; k < c.operands.size(); ++k)
    c.desc += (k ? ", " : "") + arr_name(c.operands[k]);
  c.desc += "], " + std::to_string(axis) + ")";
  if (n == 0)
    c.e = invalid("no arrays");
  else if (operands_live(p, c.operands)) {
    const Host &h0 = p.slots[x].host;
    size_t a;
    bool ok = !h0.shape.empty() && norm_axis(axis, h0.shape.size(), a);
    spmd_dtype t = h0.dt;
    Shape out = h0.shape;
    if (ok) out[a] = 0;
    bool overflow = false;
    for (size_t k = 0; ok && k < n; ++k) {
      const Host &h = p.slots[c.operands[k]].host;
      ok = h.shape.size() == h0.shape.size();
      for (size_t d = 0; ok && d < h.shape.size(); ++d) ok = d == a || h.shape[d] == h0.shape[d];
      if (ok && __builtin_add_overflow(out[a], h.shape[a], &out[a])) overflow = true;
      t = promote(t, h.dt);
    }
    if (!ok || overflow) {
      c.e = invalid(overflow ? "a dimension past INT64_MAX"
                             : "zero-dimensional, or shapes differ outside the axis");
    } else {
      c.e.init(t, out);
      std::vector<int64_t> oi(out.size());
      for (size_t k = 0; k < c.e.ref.size(); ++k) {
        unravel(static_cast<int64_t>(k), out, oi.data());
        size_t part = 0;
        while (oi[a] >= p.slots[c.operands[part]].host.shape[a])
          oi[a] -= p.slots[c.operands[part++]].host.shape[a];
        const Host &h = p.slots[c.operands[part]].host;
        c.e.ref[k] = convert(h.dt, h.v[static_cast<size_t>(ravel(oi.data(), h.shape))], t);
        c.e.alt[k] = c.e.ref[k].i;
      }
    }
    for (int s : c.operands)
      if (has_huge_dim(p.slots[s].host.shape) &&
          skip_known("concatenate of empty arrays of huge dimensions"))
        return;
  }
  std::vector<const spmd_array *> xs_h;
  for (int s : c.operands) xs_h.push_back(p.slots[s].h);
  c.invoke = [=](const spmd_op_options *o, spmd_array **r) {
    return spmd_concatenate(n, n ? xs_h.data() : nullptr, axis, o, r);
  };
  p.run(c);
}

using OpFn = void (*)(Program &);
struct OpEntry {
  const char *name;
  OpFn fn;
};
const OpEntry kOps[] = {
    {"unary", op_unary},
    {"astype", op_astype},
    {"binary", op_binary},
    {"binary_scalar", op_binary_scalar},
    {"where", op_where},
    {"reduce", op_reduce},
    {"argmax", op_argmax},
    {"softmax", op_softmax},
    {"dot_general", op_dot_general},
    {"matmul", op_matmul},
    {"einsum", op_einsum},
    {"transpose", op_transpose},
    {"reshape", op_reshape},
    {"broadcast_to", op_broadcast_to},
    {"slice", op_slice},
    {"concatenate", op_concatenate},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz::Bytes in(data, size);
  const uint8_t head = in.byte();
  const bool sim = (head & 0x50) == 0x50;
  // The cpu runtime lasts the whole run; a sim runtime lasts one program,
  // so that the frees its device queues run late are all done when the
  // input returns (LeakSanitizer would scan after every such input).
  static Platform cpu;
  Platform sim_platform;
  Platform &pf = sim ? sim_platform : cpu;
  open_platform(pf, sim, head % 16);
  trace("---- program on mesh %u%s%s\n", head % 16u, sim ? " (sim)" : "",
        (head >> 5) & 1 ? ", huge dimensions" : "");
  {
    Program prog(in, pf, head % 16, (head >> 5) & 1);
    for (int k = 0; k < kMaxOps && !in.empty(); ++k) {
      const OpEntry &op = kOps[in.byte() % std::size(kOps)];
      prog.busy.clear();
      op.fn(prog);
    }
  }
  if (sim) close_platform(sim_platform);
  return 0;
}
