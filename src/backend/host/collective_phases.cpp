// Collective algorithms over host-addressable memory (see the header).
#include "backend/host/collective_phases.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/host/copy.hpp"
#include "backend/host/reduce.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"

namespace spmd::host {

namespace {

Shape erase_dim(const Shape &s, int64_t d) {
  Shape r = s;
  r.erase(r.begin() + d);
  return r;
}

void all_reduce(const CollectiveCall &c, void *out_v, const HostGroup &g, int phase,
                bool reduce_whole) {
  const size_t n = g.size(), me = g.rank(), es = dtype_size(c.dtype);
  const size_t count = static_cast<size_t>(shape_elements(c.out_shape));
  std::vector<const void *> srcs(n);
  auto *out = static_cast<char *>(out_v);
  if (reduce_whole) {
    for (size_t r = 0; r < n; ++r) srcs[r] = g.slot(r).in;
    reduce_buffers(c.dtype, c.op, out, srcs.data(), n, count);
    return;
  }
  // Chunks rounded to 64 elements keep the loops aligned and vectorised.
  size_t chunk = (count + n - 1) / n;
  chunk = (chunk + 63) / 64 * 64;
  auto range = [&](size_t r, size_t &lo, size_t &len) {
    lo = std::min(count, r * chunk);
    len = std::min(count, lo + chunk) - lo;
  };
  size_t lo, len;
  if (phase == 0) {  // reduce-scatter: this member's chunk from every input
    range(me, lo, len);
    for (size_t r = 0; r < n; ++r) srcs[r] = static_cast<const char *>(g.slot(r).in) + lo * es;
    reduce_buffers(c.dtype, c.op, out + lo * es, srcs.data(), n, len);
    return;
  }
  for (size_t r = 0; r < n; ++r) {  // all-gather of the reduced chunks
    if (r == me) continue;
    range(r, lo, len);
    if (len) copy_bytes(out + lo * es, static_cast<const char *>(g.slot(r).out) + lo * es, len * es);
  }
}

void all_gather(const CollectiveCall &c, void *out, const HostGroup &g) {
  // An empty block has no memory (a null pointer) to offset: skip it.
  if (shape_elements(c.out_shape) == 0) return;
  const size_t n = g.size(), es = dtype_size(c.dtype);
  const Shape ostr = dense_strides(c.out_shape);
  int64_t offset = 0;
  for (size_t r = 0; r < n; ++r) {
    const HostSlot &s = g.slot(r);
    if (shape_elements(*s.in_shape) == 0) {
      if (c.tiled) offset += (*s.in_shape)[static_cast<size_t>(c.axis)];
      continue;
    }
    const Shape sstr = dense_strides(*s.in_shape);
    char *dst = static_cast<char *>(out);
    Shape dstr;
    if (c.tiled) {
      dst += offset * ostr[static_cast<size_t>(c.axis)] * static_cast<int64_t>(es);
      dstr = ostr;
      offset += (*s.in_shape)[static_cast<size_t>(c.axis)];
    } else {
      dst += static_cast<int64_t>(r) * ostr[static_cast<size_t>(c.axis)] * static_cast<int64_t>(es);
      dstr = erase_dim(ostr, c.axis);
    }
    strided_copy(*s.in_shape, static_cast<const char *>(s.in), sstr, dst, dstr, es);
  }
}

void reduce_scatter(const CollectiveCall &c, void *out, const HostGroup &g) {
  const size_t n = g.size(), me = g.rank(), es = dtype_size(c.dtype);
  const Shape &shape = *g.slot(me).in_shape;
  const size_t ax = static_cast<size_t>(c.axis);
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
  std::vector<const void *> srcs(n);
  const size_t run = static_cast<size_t>(len * inner);
  if (run == 0) return;
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t src_off = (o * dim + start) * inner * static_cast<int64_t>(es);
    for (size_t r = 0; r < n; ++r) srcs[r] = static_cast<const char *>(g.slot(r).in) + src_off;
    reduce_buffers(c.dtype, c.op, static_cast<char *>(out) + o * static_cast<int64_t>(run * es),
                   srcs.data(), n, run);
  }
}

void all_to_all(const CollectiveCall &c, void *out, const HostGroup &g) {
  // Empty pieces have no memory (null pointers) to offset: skip them.
  if (shape_elements(c.out_shape) == 0) return;
  const size_t n = g.size(), me = g.rank(), es = dtype_size(c.dtype);
  const size_t sa = static_cast<size_t>(c.axis), ca = static_cast<size_t>(c.concat_axis);
  const Shape ostr = dense_strides(c.out_shape);
  int64_t offset = 0;
  for (size_t j = 0; j < n; ++j) {
    const HostSlot &s = g.slot(j);
    const Shape sstr = dense_strides(*s.in_shape);
    const char *src = static_cast<const char *>(s.in);
    char *dst = static_cast<char *>(out);
    if (c.tiled) {
      const int64_t dim = (*s.in_shape)[sa];
      const int64_t chunk = (dim + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
      const int64_t start = std::min<int64_t>(dim, static_cast<int64_t>(me) * chunk);
      Shape ext = *s.in_shape;
      ext[sa] = std::min<int64_t>(dim, start + chunk) - start;
      if (shape_elements(ext) == 0) {
        offset += ext[ca];
        continue;
      }
      src += start * sstr[sa] * static_cast<int64_t>(es);
      dst += offset * ostr[ca] * static_cast<int64_t>(es);
      offset += ext[ca];
      strided_copy(ext, src, sstr, dst, ostr, es);
    } else {
      src += static_cast<int64_t>(me) * sstr[sa] * static_cast<int64_t>(es);
      dst += static_cast<int64_t>(j) * ostr[ca] * static_cast<int64_t>(es);
      strided_copy(erase_dim(*s.in_shape, c.axis), src, erase_dim(sstr, c.axis), dst,
                   erase_dim(ostr, c.concat_axis), es);
    }
  }
}

void permute(const CollectiveCall &c, void *out, const HostGroup &g) {
  const size_t bytes = static_cast<size_t>(shape_elements(c.out_shape)) * dtype_size(c.dtype);
  if (bytes == 0) return;
  if (c.source < 0)
    std::memset(out, 0, bytes);
  else
    copy_bytes(out, g.slot(static_cast<size_t>(c.source)).in, bytes);
}

}  // namespace

int phase_count(const CollectiveCall &c, bool reduce_whole) {
  return c.kind == Transport::AllReduce && !reduce_whole ? 2 : 1;
}

void run_phase(const CollectiveCall &c, void *out, const HostGroup &g, int phase,
               bool reduce_whole) {
  switch (c.kind) {
    case Transport::AllReduce: return all_reduce(c, out, g, phase, reduce_whole);
    case Transport::AllGather: return all_gather(c, out, g);
    case Transport::ReduceScatter: return reduce_scatter(c, out, g);
    case Transport::AllToAll: return all_to_all(c, out, g);
    case Transport::Permute: return permute(c, out, g);
  }
  fail(SPMD_ERR_INTERNAL, "unknown collective kind");
}


}  // namespace spmd::host
