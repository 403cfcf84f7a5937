// The reduction kernel's per-element body (kernels/reduce_axes.hpp) and the
// order the CUDA kernel folds in.
//
// Each output element is folded by a team of `lanes` threads: lane l takes
// the reduced elements r = l, l + lanes, l + 2 lanes, ... in turn, then the
// lanes' partials are combined pairwise (lane l with lane l + s, for s =
// lanes/2, lanes/4, ..., 1). The team size depends only on the shape, so a
// float sum is the same from run to run and from GPU to GPU; it is not the
// CPU kernel's order (eight running sums per row), so float sums differ
// from the CPU's by rounding. Everything else is exact and order-free:
// max and min give the CPU's value (a NaN wins, the last NaN when there
// are several; else IEEE maximum / minimum under DAZ, which no order
// changes), argmax its index (the first NaN, else the first largest).
#pragma once

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "kernels/device/cpu_float.hpp"
#include "kernels/reduce_axes.hpp"

namespace spmd::dev::red {

using Op = spmd::red::Op;

constexpr int kMaxDims = 16;
constexpr int kThreads = 512;  // threads per block; lanes divide it

// The input's dimensions collapsed as the CPU kernel collapses them (unit
// dimensions dropped, neighbours of one kind merged), split into those
// kept (the output, row-major) and those reduced (r, row-major).
struct Plan {
  Op op = Op::Sum;
  spmd_dtype in = SPMD_F32, out = SPMD_F32;
  int nkept = 0, nred = 0;
  int64_t kept[kMaxDims] = {}, kept_stride[kMaxDims] = {};
  int64_t red[kMaxDims] = {}, red_stride[kMaxDims] = {};
  int64_t outputs = 1;  // elements of the output
  int64_t reduced = 1;  // elements folded into each
  bool inner_reduced = false;
};

inline Plan make_plan(const spmd::red::Params &p) {
  Plan l;
  l.op = p.op;
  l.in = p.in;
  l.out = p.out;
  int64_t dims[kMaxDims];
  bool red[kMaxDims];
  int nd = 0;
  for (size_t d = 0; d < p.shape.size(); ++d) {
    if (p.shape[d] == 1) continue;
    if (nd > 0 && red[nd - 1] == p.reduced[d]) {
      dims[nd - 1] *= p.shape[d];
      continue;
    }
    dims[nd] = p.shape[d];
    red[nd] = p.reduced[d];
    ++nd;
  }
  int64_t stride = 1;
  for (int d = nd - 1; d >= 0; --d) {
    if (red[d]) {
      l.red[l.nred] = dims[d];
      l.red_stride[l.nred++] = stride;
    } else {
      l.kept[l.nkept] = dims[d];
      l.kept_stride[l.nkept++] = stride;
    }
    stride *= dims[d];
  }
  // Collected innermost first; row-major wants outermost first.
  for (int i = 0, j = l.nkept - 1; i < j; ++i, --j) {
    std::swap(l.kept[i], l.kept[j]);
    std::swap(l.kept_stride[i], l.kept_stride[j]);
  }
  for (int i = 0, j = l.nred - 1; i < j; ++i, --j) {
    std::swap(l.red[i], l.red[j]);
    std::swap(l.red_stride[i], l.red_stride[j]);
  }
  for (int i = 0; i < l.nkept; ++i) l.outputs *= l.kept[i];
  for (int i = 0; i < l.nred; ++i) l.reduced *= l.red[i];
  l.inner_reduced = nd > 0 && red[nd - 1];
  return l;
}

// Element offset of output o's first element, and of reduced element r
// from there.
SPMD_HD int64_t kept_offset(const Plan &p, int64_t o) {
  int64_t off = 0;
  for (int d = p.nkept - 1; d > 0; --d) {
    const int64_t q = o / p.kept[d];
    off += (o - q * p.kept[d]) * p.kept_stride[d];
    o = q;
  }
  return p.nkept ? off + o * p.kept_stride[0] : 0;
}
SPMD_HD int64_t red_offset(const Plan &p, int64_t r) {
  int64_t off = 0;
  for (int d = p.nred - 1; d > 0; --d) {
    const int64_t q = r / p.red[d];
    off += (r - q * p.red[d]) * p.red_stride[d];
    r = q;
  }
  return p.nred ? off + r * p.red_stride[0] : 0;
}

// ---- values ----

// An input element as the accumulator type, as the CPU kernel's load
// (which runs under DAZ and FTZ).
template <typename A>
SPMD_HD A load(spmd_dtype d, const unsigned char *p) {
  if constexpr (std::is_same_v<A, int64_t>) {
    switch (d) {
      case SPMD_F32: return truncate_x86(widen(load_as<float>(p)));
      case SPMD_F64: return truncate_x86(load_as<double>(p));
      case SPMD_F16: return truncate_x86(widen(f16_bits_to_f32(load_as<uint16_t>(p))));
      case SPMD_BF16: return truncate_x86(widen(bf16_bits_to_f32(load_as<uint16_t>(p))));
      default: return load_int(d, p);  // integers and bool
    }
  } else {
    float f = 0;
    switch (d) {
      case SPMD_F32: f = load_as<float>(p); break;
      case SPMD_F64: {
        const double v = load_as<double>(p);
        if constexpr (sizeof(A) == 8) return v;
        else return narrow_ftz(v);
      }
      case SPMD_F16: f = f16_bits_to_f32(load_as<uint16_t>(p)); break;
      case SPMD_BF16: f = bf16_bits_to_f32(load_as<uint16_t>(p)); break;
      default: return static_cast<A>(load_int(d, p));  // integers and bool
    }
    if constexpr (sizeof(A) == 8) return widen_daz(f);
    else return f;
  }
}

// x86's truncating conversion to int32 (cvttss2si), out of range INT32_MIN.
SPMD_HD int32_t truncate_x86_32(double v) {
  if (is_nan(v) || !(v > -2147483649.0 && v < 2147483648.0)) return INT32_MIN;
  return static_cast<int32_t>(v);
}

// The accumulator stored as the output's type, as the CPU kernel's store.
template <typename A>
SPMD_HD void store(spmd_dtype d, A acc, unsigned char *p) {
  if constexpr (std::is_same_v<A, int64_t>) {
    switch (d) {
      case SPMD_F32: store_as(p, static_cast<float>(acc)); return;
      case SPMD_F64: store_as(p, static_cast<double>(acc)); return;
      case SPMD_F16: store_as(p, f32_to_f16_bits(static_cast<float>(acc))); return;
      case SPMD_BF16: store_as(p, f32_to_bf16_bits(static_cast<float>(acc))); return;
      default: store_int(d, acc, p); return;  // integers (wrapped) and bool
    }
  } else {
    const double wide = sizeof(A) == 8 ? static_cast<double>(acc) : widen_daz(static_cast<float>(acc));
    const float narrow32 = sizeof(A) == 8 ? narrow_ftz(static_cast<double>(acc)) : static_cast<float>(acc);
    switch (d) {
      case SPMD_F32: store_as(p, narrow32); return;
      case SPMD_F64: store_as(p, wide); return;
      case SPMD_F16: store_as(p, f32_to_f16_bits(narrow32)); return;
      case SPMD_BF16: store_as(p, f32_to_bf16_bits(narrow32)); return;
      case SPMD_I32: store_as(p, truncate_x86_32(wide)); return;
      case SPMD_I64: store_as(p, truncate_x86(wide)); return;
      case SPMD_U8: *p = static_cast<uint8_t>(truncate_x86_32(wide)); return;
      case SPMD_BOOL: *p = daz(acc) != A(0); return;
      default: store_int(d, truncate_x86(wide), p); return;  // never reached: no float reduces into these
    }
  }
}

// ---- the folds: identity, one element in, two partials together, out ----

template <typename A>
SPMD_HD A lowest() {
  if constexpr (std::is_same_v<A, int64_t>) return INT64_MIN;
  else return -std::numeric_limits<A>::infinity();
}
template <typename A>
SPMD_HD A highest() {
  if constexpr (std::is_same_v<A, int64_t>) return INT64_MAX;
  else return std::numeric_limits<A>::infinity();
}

// The identity of max (lowest) or min in the result's type `out`, as the
// CPU kernel's: an int32 max of nothing is INT32_MIN (int64's would wrap to
// 0 when stored), a bool's max of nothing is false.
template <typename A>
SPMD_HD A extreme_identity(Op op, spmd_dtype out) {
  const bool max = op == Op::Max;
  if constexpr (std::is_same_v<A, int64_t>) {
    return max ? int_min(out) : int_max(out);
  } else {
    return max ? lowest<A>() : highest<A>();
  }
}

template <typename A>
SPMD_HD bool nan_of(A v) {
  if constexpr (std::is_same_v<A, int64_t>) return false;
  else return is_nan(v);
}

// jnp.sum: floats as the CPU adds them (DAZ, FTZ), integers wrapping.
template <typename A>
struct Sum {
  using Acc = A;
  static SPMD_HD Acc identity(const Plan &) { return A(0); }
  static SPMD_HD Acc plus(Acc a, Acc b) {
    if constexpr (std::is_same_v<A, int64_t>)
      return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    else return add(a, b);
  }
  // A sum of one value is that value (XLA copies it: a subnormal stays):
  // then one lane folds it and every other partial is the identity.
  static SPMD_HD Acc fold(const Plan &p, Acc acc, A v, int64_t) { return p.reduced == 1 ? v : plus(acc, v); }
  static SPMD_HD Acc combine(const Plan &p, Acc a, Acc b) {
    if constexpr (!std::is_same_v<A, int64_t>)
      if (p.reduced == 1) return bits_of(a) == 0 ? b : a;  // +0: the identity, or the value's own bits
    return plus(a, b);
  }
  static SPMD_HD void put(const Plan &p, Acc acc, unsigned char *o) { store(p.out, acc, o); }
};

// A value with where it came from (r; -1 for the identity), so that the
// CPU's winner is found in any order.
template <typename A>
struct Best {
  A v;
  int64_t at;
};

// jnp.max / jnp.min as the CPU kernel (kernels/reduce_axes.cpp): the last
// NaN if any; else, for floats, IEEE maximum (minimum) under DAZ, -0 below
// +0; one value alone (the identity's partner) unflushed, as XLA copies it.
template <typename A>
struct Extreme {
  using Acc = Best<A>;
  static SPMD_HD Acc identity(const Plan &p) { return {extreme_identity<A>(p.op, p.out), -1}; }
  static SPMD_HD Acc combine(const Plan &p, Acc a, Acc b) {
    if (a.at < 0) return b;
    if (b.at < 0) return a;
    const bool an = nan_of(a.v), bn = nan_of(b.v);
    if (an || bn) {
      if (an && bn) return a.at > b.at ? a : b;
      return an ? a : b;
    }
    const int64_t at = a.at > b.at ? a.at : b.at;
    if constexpr (std::is_same_v<A, int64_t>) {
      return (p.op == Op::Max ? b.v > a.v : b.v < a.v) ? Acc{b.v, at} : Acc{a.v, at};
    } else {
      return {p.op == Op::Max ? ieee_extremum<A, true>(a.v, b.v) : ieee_extremum<A, false>(a.v, b.v), at};
    }
  }
  static SPMD_HD Acc fold(const Plan &p, Acc acc, A v, int64_t r) { return combine(p, acc, {v, r}); }
  static SPMD_HD void put(const Plan &p, Acc acc, unsigned char *o) { store(p.out, acc.v, o); }
};

// jnp.argmax (jnp.argmin when Min): the first NaN if any; else the first
// largest (smallest) under DAZ.
template <typename A, bool Min>
struct ArgBest {
  using Acc = Best<A>;
  static SPMD_HD Acc identity(const Plan &) { return {A(0), -1}; }
  static SPMD_HD Acc combine(const Plan &, Acc a, Acc b) {
    if (a.at < 0) return b;
    if (b.at < 0) return a;
    const bool an = nan_of(a.v), bn = nan_of(b.v);
    if (an || bn) {
      if (an && bn) return a.at < b.at ? a : b;
      return an ? a : b;
    }
    const A x = daz(a.v), y = daz(b.v);
    if (Min ? y < x : y > x) return b;
    if (Min ? x < y : x > y) return a;
    return a.at < b.at ? a : b;
  }
  static SPMD_HD Acc fold(const Plan &p, Acc acc, A v, int64_t r) { return combine(p, acc, {v, r}); }
  static SPMD_HD void put(const Plan &, Acc acc, unsigned char *o) {
    store_as(o, static_cast<int32_t>(acc.at < 0 ? 0 : acc.at));
  }
};
template <typename A>
using ArgMax = ArgBest<A, false>;
template <typename A>
using ArgMin = ArgBest<A, true>;

// Elements a lane loads ahead of folding them, so that many loads are in
// flight at once; they are folded in the same order as one by one.
constexpr int kAhead = 8;

// Lane `lane` of `lanes`'s partial of output o over the reduced elements
// [begin, end): r = begin + lane, begin + lane + lanes, ... folded in that
// order, kAhead loads in flight at a time. `In`, when given, is p.in known
// at compile time: the load's switch over dtypes folds away, so the loads
// of a step issue together (the GPU's kernels pass it; the host's model
// need not).
template <typename K, typename A, int In = -1>
SPMD_HD typename K::Acc lane_partial(const Plan &p, const unsigned char *in, int64_t o,
                                     int64_t lane, int64_t lanes, int64_t begin, int64_t end) {
  const spmd_dtype dt = In < 0 ? p.in : static_cast<spmd_dtype>(In);
  const int es = dtype_bytes(dt);
  const unsigned char *base = in + kept_offset(p, o) * es;
  typename K::Acc acc = K::identity(p);
  int64_t r = begin + lane;
  if (p.nred <= 1) {  // the reduced elements one stride apart
    // A pointer stepped by `jump` bytes: no 64-bit products in the loop
    // (a GPU spends several instructions on each).
    const int64_t step = (p.nred ? p.red_stride[0] : 0) * es;
    const int64_t jump = step * lanes;
    const unsigned char *at = base + r * step;
    for (; r + (kAhead - 1) * lanes < end; r += kAhead * lanes, at += kAhead * jump) {
      A v[kAhead];
      SPMD_UNROLL
      for (int j = 0; j < kAhead; ++j) v[j] = load<A>(dt, at + j * jump);
      SPMD_UNROLL
      for (int j = 0; j < kAhead; ++j) acc = K::fold(p, acc, v[j], r + j * lanes);
    }
    for (; r < end; r += lanes, at += jump) acc = K::fold(p, acc, load<A>(dt, at), r);
    return acc;
  }
  for (; r + (kAhead - 1) * lanes < end; r += kAhead * lanes) {
    A v[kAhead];
    SPMD_UNROLL
    for (int j = 0; j < kAhead; ++j) v[j] = load<A>(dt, base + red_offset(p, r + j * lanes) * es);
    SPMD_UNROLL
    for (int j = 0; j < kAhead; ++j) acc = K::fold(p, acc, v[j], r + j * lanes);
  }
  for (; r < end; r += lanes) acc = K::fold(p, acc, load<A>(dt, base + red_offset(p, r) * es), r);
  return acc;
}

// ---- the host side ----

// How the CUDA kernel splits the work: `lanes` threads per output, a block
// of kThreads threads holding kThreads / lanes outputs, consecutive
// threads on consecutive outputs (`outputs_fastest`, when the innermost
// dimension is kept, so reads are coalesced) or on consecutive lanes. Lanes
// are added while the outputs alone give fewer than 2^17 threads, and up to
// 32 when the innermost dimension is reduced, never beyond the elements
// folded.
//
// Few outputs of many elements each (a full sum) would leave most of the
// GPU idle at one block per output, so their reduced elements are cut into
// `parts` consecutive ranges of `part_len` (the last shorter), each folded
// by a block of kThreads lanes into a partial; a second kernel then
// combines each output's partials pairwise in one block (in order, one
// thread folding a thousand partials cost a fifth of a 1 GiB sum).
// Every choice depends on the shape alone, so a float sum rounds the same
// from run to run and from GPU to GPU.
constexpr int64_t kPartElements = int64_t{1} << 18;  // fewest elements a part folds
constexpr int kMaxParts = 1024;
constexpr int64_t kMaxPartials = 8192;  // outputs * parts: the scratch it needs

// The power of two at or above `parts`: the threads that combine an
// output's partials pairwise.
SPMD_HD int parts_span(int parts) {
  int span = 1;
  while (span < parts) span *= 2;
  return span;
}

struct Teams {
  int lanes = 1;
  bool outputs_fastest = true;
  int parts = 1;
  int64_t part_len = 0;  // reduced elements per part (the plan's `reduced` when parts is 1)
};

inline Teams teams(const Plan &p) {
  Teams t;
  t.outputs_fastest = !p.inner_reduced;
  while (t.lanes < kThreads && t.lanes * 2 <= p.reduced &&
         (p.outputs * t.lanes < (int64_t{1} << 17) || (p.inner_reduced && t.lanes < 32)))
    t.lanes *= 2;
  t.part_len = p.reduced;
  if (t.lanes == kThreads && p.outputs > 0) {
    const int64_t parts = std::min<int64_t>(
        {p.reduced / kPartElements, kMaxParts, kMaxPartials / p.outputs});
    if (parts > 1) {
      t.part_len = (p.reduced + parts - 1) / parts;
      t.parts = static_cast<int>((p.reduced + t.part_len - 1) / t.part_len);
    }
  }
  return t;
}

// The accumulator type of a plan: int64 for integers and bool, double for
// f64, float for the other floats (as the CPU kernel).
enum class AccType { I64, F64, F32 };
inline AccType acc_type(spmd_dtype in) {
  if (in == SPMD_F64) return AccType::F64;
  if (in == SPMD_F32 || in == SPMD_F16 || in == SPMD_BF16) return AccType::F32;
  return AccType::I64;
}

// The partial of lanes 0..lanes-1 over [begin, end) of output o, combined
// pairwise (lane l with lane l + s, s = lanes/2, ..., 1) as a block does.
template <typename K, typename A>
typename K::Acc team_partial(const Plan &p, const unsigned char *in, int64_t o, int lanes,
                             int64_t begin, int64_t end) {
  std::vector<typename K::Acc> part(static_cast<size_t>(lanes));
  for (int l = 0; l < lanes; ++l) part[static_cast<size_t>(l)] = lane_partial<K, A>(p, in, o, l, lanes, begin, end);
  for (int s = lanes / 2; s >= 1; s /= 2)
    for (int l = 0; l < s; ++l)
      part[static_cast<size_t>(l)] = K::combine(p, part[static_cast<size_t>(l)], part[static_cast<size_t>(l + s)]);
  return part[0];
}

// Output o exactly as the CUDA kernels compute it, part by part (each
// lane by lane, then pairwise), then the parts pairwise (part q with part
// q + s, s = P/2, ..., 1 for P the power of two at or above `parts`, where
// part q + s exists): what the host tests compare the GPU's bits with.
template <typename K, typename A>
void reduce_output(const Plan &p, const unsigned char *in, int64_t o, int lanes, int parts,
                   int64_t part_len, unsigned char *out) {
  std::vector<typename K::Acc> part(static_cast<size_t>(parts));
  for (int q = 0; q < parts; ++q) {
    const int64_t begin = parts > 1 ? q * part_len : 0;
    const int64_t end = parts > 1 ? std::min(p.reduced, begin + part_len) : p.reduced;
    part[static_cast<size_t>(q)] = team_partial<K, A>(p, in, o, lanes, begin, end);
  }
  for (int s = parts_span(parts) / 2; s >= 1; s /= 2)
    for (int q = 0; q < s && q + s < parts; ++q)
      part[static_cast<size_t>(q)] = K::combine(p, part[static_cast<size_t>(q)], part[static_cast<size_t>(q + s)]);
  K::put(p, part[0], out + o * dtype_bytes(p.out));
}

}  // namespace spmd::dev::red
