// Collectives of the CPU platform: the devices of a group are threads of one
// process, so each reads its peers' buffers directly (a single copy, no
// staging) between the group's barriers. All-reduce is reduce-scatter by
// chunks followed by all-gather, so each device touches 2(n-1)/n of the
// data, as a ring would, instead of n times it.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/reduce.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "spmd/sharding.h"

namespace spmd::cpu {

namespace {

// Copies of a megabyte or more stream to memory with non-temporal stores:
// the destination is not read for ownership first and the caches are not
// flushed by data no one reads soon. memcpy takes that path only for much
// larger sizes, and is about 1.6 times slower below it.
constexpr size_t kStreamCopyBytes = size_t{1} << 20;

inline void copy_bytes(void *dst_v, const void *src_v, size_t n) {
#if defined(__SSE2__)
  if (n >= kStreamCopyBytes) {
    auto *dst = static_cast<char *>(dst_v);
    const auto *src = static_cast<const char *>(src_v);
    const size_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
    std::memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
      _mm_prefetch(src + i + 512, _MM_HINT_NTA);
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 48), d);
    }
    _mm_sfence();
    std::memcpy(dst + i, src + i, n - i);
    return;
  }
#endif
  std::memcpy(dst_v, src_v, n);
}

Shape dense_strides(const Shape &shape) {
  Shape s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

Shape erase_dim(const Shape &s, int64_t d) {
  Shape r = s;
  r.erase(r.begin() + d);
  return r;
}

// Copies a logical block of extent `ext` between two strided views (strides
// in elements), merging the trailing dimensions contiguous in both into one
// memcpy run.
void strided_copy(const Shape &ext, const char *src, const Shape &ss, char *dst, const Shape &ds,
                  size_t es) {
  const size_t nd = ext.size();
  for (int64_t e : ext)
    if (e <= 0) return;
  if (nd == 0) {
    std::memcpy(dst, src, es);
    return;
  }
  size_t inner = nd;  // dimensions [inner, nd) form one contiguous run
  int64_t run = 1;
  while (inner > 0 && ss[inner - 1] == run && ds[inner - 1] == run) {
    --inner;
    run *= ext[inner];
  }
  const size_t run_bytes = static_cast<size_t>(run) * es;
  if (inner == 0) {
    copy_bytes(dst, src, run_bytes);
    return;
  }
  int64_t idx[SPMD_MAX_NDIM + 1] = {0};
  for (;;) {
    int64_t so = 0, dof = 0;
    for (size_t i = 0; i < inner; ++i) {
      so += idx[i] * ss[i];
      dof += idx[i] * ds[i];
    }
    copy_bytes(dst + dof * static_cast<int64_t>(es), src + so * static_cast<int64_t>(es),
               run_bytes);
    size_t k = inner;
    for (;;) {
      if (k == 0) return;
      --k;
      if (++idx[k] < ext[k]) break;
      idx[k] = 0;
    }
  }
}

// Each collective is one or two phases; between phases (and after the
// last) every member of the group must have finished the previous one. On a
// thread per device that is a barrier; on the worker pool it is the end of a
// parallel_for over all members.

bool small_all_reduce(const CollectiveCall &c) {
  return static_cast<size_t>(shape_elements(c.out_shape)) * dtype_size(c.dtype) <=
         kSmallAllReduceBytes;
}

int phase_count(const CollectiveCall &c) {
  return c.kind == Transport::AllReduce && !small_all_reduce(c) ? 2 : 1;
}

void all_reduce(const CollectiveCall &c, const GroupView &g, int phase) {
  const size_t n = g.size(), me = g.rank(), es = dtype_size(c.dtype);
  const size_t count = static_cast<size_t>(shape_elements(c.out_shape));
  std::vector<const void *> srcs(n);
  auto *out = static_cast<char *>(c.out);
  if (small_all_reduce(c)) {
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

void all_gather(const CollectiveCall &c, const GroupView &g) {
  const size_t n = g.size(), es = dtype_size(c.dtype);
  const Shape ostr = dense_strides(c.out_shape);
  int64_t offset = 0;
  for (size_t r = 0; r < n; ++r) {
    const CollSlot &s = g.slot(r);
    const Shape sstr = dense_strides(s.in_shape);
    char *dst = static_cast<char *>(c.out);
    Shape dstr;
    if (c.tiled) {
      dst += offset * ostr[static_cast<size_t>(c.axis)] * static_cast<int64_t>(es);
      dstr = ostr;
      offset += s.in_shape[static_cast<size_t>(c.axis)];
    } else {
      dst += static_cast<int64_t>(r) * ostr[static_cast<size_t>(c.axis)] * static_cast<int64_t>(es);
      dstr = erase_dim(ostr, c.axis);
    }
    strided_copy(s.in_shape, static_cast<const char *>(s.in), sstr, dst, dstr, es);
  }
}

void reduce_scatter(const CollectiveCall &c, const GroupView &g) {
  const size_t n = g.size(), me = g.rank(), es = dtype_size(c.dtype);
  const Shape &shape = g.slot(me).in_shape;
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
    reduce_buffers(c.dtype, c.op, static_cast<char *>(c.out) + o * static_cast<int64_t>(run * es),
                   srcs.data(), n, run);
  }
}

void all_to_all(const CollectiveCall &c, const GroupView &g) {
  const size_t n = g.size(), me = g.rank(), es = dtype_size(c.dtype);
  const size_t sa = static_cast<size_t>(c.axis), ca = static_cast<size_t>(c.concat_axis);
  const Shape ostr = dense_strides(c.out_shape);
  int64_t offset = 0;
  for (size_t j = 0; j < n; ++j) {
    const CollSlot &s = g.slot(j);
    const Shape sstr = dense_strides(s.in_shape);
    const char *src = static_cast<const char *>(s.in);
    char *dst = static_cast<char *>(c.out);
    if (c.tiled) {
      const int64_t dim = s.in_shape[sa];
      const int64_t chunk = (dim + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
      const int64_t start = std::min<int64_t>(dim, static_cast<int64_t>(me) * chunk);
      Shape ext = s.in_shape;
      ext[sa] = std::min<int64_t>(dim, start + chunk) - start;
      src += start * sstr[sa] * static_cast<int64_t>(es);
      dst += offset * ostr[ca] * static_cast<int64_t>(es);
      offset += ext[ca];
      strided_copy(ext, src, sstr, dst, ostr, es);
    } else {
      src += static_cast<int64_t>(me) * sstr[sa] * static_cast<int64_t>(es);
      dst += static_cast<int64_t>(j) * ostr[ca] * static_cast<int64_t>(es);
      strided_copy(erase_dim(s.in_shape, c.axis), src, erase_dim(sstr, c.axis), dst,
                   erase_dim(ostr, c.concat_axis), es);
    }
  }
}

void permute(const CollectiveCall &c, const GroupView &g) {
  const size_t bytes = static_cast<size_t>(shape_elements(c.out_shape)) * dtype_size(c.dtype);
  if (bytes == 0) return;
  if (c.source < 0)
    std::memset(c.out, 0, bytes);
  else
    copy_bytes(c.out, g.slot(static_cast<size_t>(c.source)).in, bytes);
}

void run_phase(const CollectiveCall &c, const GroupView &g, int phase) {
  switch (c.kind) {
    case Transport::AllReduce: return all_reduce(c, g, phase);
    case Transport::AllGather: return all_gather(c, g);
    case Transport::ReduceScatter: return reduce_scatter(c, g);
    case Transport::AllToAll: return all_to_all(c, g);
    case Transport::Permute: return permute(c, g);
  }
  fail(SPMD_ERR_INTERNAL, "unknown collective kind");
}

// A member's view of a group whose slots are all known up front.
class StaticView final : public GroupView {
 public:
  StaticView(const std::vector<CollSlot> &slots, size_t rank) : slots_(slots), rank_(rank) {}
  size_t size() const override { return slots_.size(); }
  size_t rank() const override { return rank_; }
  const CollSlot &slot(size_t r) const override { return slots_[r]; }

 private:
  const std::vector<CollSlot> &slots_;
  size_t rank_;
};

}  // namespace

void CpuBackend::run_collective(const CollectiveCall &call, GroupSync &group) {
  const int phases = phase_count(call);
  for (int k = 0; k < phases; ++k) {
    run_phase(call, group, k);
    // After the last phase, so no peer still reads this member's buffers;
    // staged inputs outlive the call, so then there is nothing to wait for.
    if (k + 1 < phases || !(call.inputs_staged && small_all_reduce(call))) group.barrier();
  }
}

bool CpuBackend::run_collective_groups(
    const std::vector<GroupCall> &groups,
    const std::function<void(size_t, const std::function<void(size_t)> &)> &parallel_for) {
  // Members of all groups, flattened: (group, rank).
  std::vector<std::pair<size_t, size_t>> items;
  int phases = 0;
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (size_t r = 0; r < groups[gi].calls.size(); ++r) {
      items.emplace_back(gi, r);
      phases = std::max(phases, phase_count(groups[gi].calls[r]));
    }
  for (int k = 0; k < phases; ++k)
    parallel_for(items.size(), [&](size_t i) {
      const auto [gi, r] = items[i];
      const GroupCall &g = groups[gi];
      if (k < phase_count(g.calls[r])) run_phase(g.calls[r], StaticView(g.slots, r), k);
    });
  return true;
}

}  // namespace spmd::cpu
