// The native collectives as steps (see the header); each function follows
// its counterpart in host/collective_phases.cpp line for line.
#include "backend/cuda/collective_steps.hpp"

#include <algorithm>
#include <type_traits>

#include "base/dtype.hpp"
#include "base/error.hpp"

namespace spmd::cuda {

namespace {

Shape erase_dim(const Shape &s, int64_t d) {
  Shape r = s;
  r.erase(r.begin() + d);
  return r;
}

// `p` moved by `elements` elements of `es` bytes.
template <typename T>
T *advance(T *p, int64_t elements, size_t es) {
  using Byte = std::conditional_t<std::is_const_v<T>, const char, char>;
  return reinterpret_cast<T *>(reinterpret_cast<Byte *>(p) + elements * static_cast<int64_t>(es));
}

void all_reduce(const CollectiveCall &c, void *out, const std::vector<MemberSlot> &g, size_t me,
                int phase, bool reduce_whole, StepSink &sink) {
  const size_t n = g.size(), es = dtype_size(c.dtype);
  const int64_t count = shape_elements(c.out_shape);
  std::vector<const void *> srcs(n);
  if (reduce_whole) {
    if (count == 0) return;
    for (size_t r = 0; r < n; ++r) srcs[r] = g[r].in;
    sink.reduce(c.dtype, c.op, srcs.data(), n, out, count, count, count);
    return;
  }
  // Chunks of 64-element multiples, as the host's.
  int64_t chunk = (count + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
  chunk = (chunk + 63) / 64 * 64;
  auto range = [&](size_t r, int64_t &lo, int64_t &len) {
    lo = std::min<int64_t>(count, static_cast<int64_t>(r) * chunk);
    len = std::min<int64_t>(count, lo + chunk) - lo;
  };
  int64_t lo, len;
  if (phase == 0) {  // reduce-scatter: this member's chunk from every input
    range(me, lo, len);
    if (len == 0) return;
    for (size_t r = 0; r < n; ++r) srcs[r] = advance(g[r].in, lo, es);
    sink.reduce(c.dtype, c.op, srcs.data(), n, advance(out, lo, es), len, len, len);
    return;
  }
  for (size_t r = 0; r < n; ++r) {  // all-gather of the reduced chunks
    if (r == me) continue;
    range(r, lo, len);
    if (len)
      sink.copy({len}, advance(static_cast<const void *>(g[r].out), lo, es), {1},
                advance(out, lo, es), {1}, es);
  }
}

void all_gather(const CollectiveCall &c, void *out, const std::vector<MemberSlot> &g,
                StepSink &sink) {
  // An empty block has no memory (a null pointer) to offset: skip it.
  if (shape_elements(c.out_shape) == 0) return;
  const size_t n = g.size(), es = dtype_size(c.dtype), ax = static_cast<size_t>(c.axis);
  const Shape ostr = host::dense_strides(c.out_shape);
  int64_t offset = 0;
  for (size_t r = 0; r < n; ++r) {
    const Shape &shape = *g[r].in_shape;
    if (shape_elements(shape) == 0) {
      if (c.tiled) offset += shape[ax];
      continue;
    }
    if (c.tiled) {
      sink.copy(shape, g[r].in, host::dense_strides(shape), advance(out, offset * ostr[ax], es),
                ostr, es);
      offset += shape[ax];
    } else {
      sink.copy(shape, g[r].in, host::dense_strides(shape),
                advance(out, static_cast<int64_t>(r) * ostr[ax], es), erase_dim(ostr, c.axis), es);
    }
  }
}

void reduce_scatter(const CollectiveCall &c, void *out, const std::vector<MemberSlot> &g, size_t me,
                    StepSink &sink) {
  const size_t n = g.size(), es = dtype_size(c.dtype), ax = static_cast<size_t>(c.axis);
  const Shape &shape = *g[me].in_shape;
  const int64_t dim = shape[ax];
  int64_t start, len;
  if (c.tiled) {
    const int64_t chunk = (dim + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
    start = std::min<int64_t>(dim, static_cast<int64_t>(me) * chunk);
    len = std::min<int64_t>(dim, start + chunk) - start;
  } else {
    start = static_cast<int64_t>(me);
    len = 1;
  }
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < ax; ++d) outer *= shape[d];
  for (size_t d = ax + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t run = len * inner;
  if (run == 0 || outer == 0) return;
  // Row o of the output is rows [start, start + len) of the sources' o-th
  // slab along the axis: one strided reduction.
  std::vector<const void *> srcs(n);
  for (size_t r = 0; r < n; ++r) srcs[r] = advance(g[r].in, start * inner, es);
  sink.reduce(c.dtype, c.op, srcs.data(), n, out, outer * run, run, dim * inner);
}

void all_to_all(const CollectiveCall &c, void *out, const std::vector<MemberSlot> &g, size_t me,
                StepSink &sink) {
  // Empty pieces have no memory (null pointers) to offset: skip them.
  if (shape_elements(c.out_shape) == 0) return;
  const size_t es = dtype_size(c.dtype);
  for_each_all_to_all_receive(
      c, g.size(), me, [&](size_t j) -> const Shape & { return *g[j].in_shape; },
      [&](size_t j, const AllToAllPiece &p) {
        if (shape_elements(p.ext) == 0) return;
        sink.copy(p.ext, advance(g[j].in, p.from.offset, es), p.from.strides,
                  advance(out, p.to.offset, es), p.to.strides, es);
      });
}

void permute(const CollectiveCall &c, void *out, const std::vector<MemberSlot> &g, StepSink &sink) {
  const int64_t count = shape_elements(c.out_shape);
  if (count == 0) return;
  const size_t es = dtype_size(c.dtype);
  if (c.source < 0)
    sink.zero(out, static_cast<size_t>(count) * es);
  else
    sink.copy({count}, g[static_cast<size_t>(c.source)].in, {1}, out, {1}, es);
}

}  // namespace

int native_step_phases(const CollectiveCall &call, bool reduce_whole) {
  return call.kind == Transport::AllReduce && !reduce_whole ? 2 : 1;
}

void plan_native_phase(const CollectiveCall &c, void *out, const std::vector<MemberSlot> &slots,
                       size_t rank, int phase, bool reduce_whole, StepSink &sink) {
  switch (c.kind) {
    case Transport::AllReduce: return all_reduce(c, out, slots, rank, phase, reduce_whole, sink);
    case Transport::AllGather: return all_gather(c, out, slots, sink);
    case Transport::ReduceScatter: return reduce_scatter(c, out, slots, rank, sink);
    case Transport::AllToAll: return all_to_all(c, out, slots, rank, sink);
    case Transport::Permute: return permute(c, out, slots, sink);
  }
  fail(SPMD_ERR_INTERNAL, "unknown collective kind");
}

AllToAllPiece all_to_all_send(const CollectiveCall &c, const Shape &shape, size_t n,
                              size_t receiver) {
  const size_t sa = static_cast<size_t>(c.axis);
  const Shape sstr = host::dense_strides(shape);
  AllToAllPiece p;
  if (c.tiled) {
    const int64_t dim = shape[sa];
    const int64_t chunk = (dim + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
    const int64_t start = std::min<int64_t>(dim, static_cast<int64_t>(receiver) * chunk);
    p.ext = shape;
    p.ext[sa] = std::min<int64_t>(dim, start + chunk) - start;
    p.from = {start * sstr[sa], sstr};
  } else {
    p.ext = erase_dim(shape, c.axis);
    p.from = {static_cast<int64_t>(receiver) * sstr[sa], erase_dim(sstr, c.axis)};
  }
  return p;
}

bool dense_view(const Shape &ext, const Shape &strides) {
  int64_t expect = 1;
  for (size_t d = ext.size(); d-- > 0;) {
    if (ext[d] == 1) continue;
    if (strides[d] != expect) return false;
    expect *= ext[d];
  }
  return true;
}

}  // namespace spmd::cuda
