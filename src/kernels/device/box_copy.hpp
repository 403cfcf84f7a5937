// Box copies between two dense row-major buffers, cut into tiles a block of
// threads copies: the plan (dimensions merged where both sides are
// contiguous, the widest word, up to 16 bytes, that every address and
// stride allows) and one thread's share of a tile. The CUDA platform runs
// many boxes in one launch over these; the host tests run the same tiles.
#pragma once

#include "base/shape.hpp"
#include "kernels/device/common.hpp"

namespace spmd::dev::copy {

constexpr int kMaxOuter = 8;
constexpr int kThreads = 256;  // threads per block, which the tiles assume
constexpr int kUnroll = 4;     // words per thread in a tile of a long row

struct Box {
  const unsigned char *src = nullptr;
  unsigned char *dst = nullptr;
  int width = 1;          // bytes per word: 1, 2, 4, 8 or 16
  int nouter = 0;         // dimensions outside the contiguous run
  int64_t words = 0;      // words per row (the contiguous run)
  int64_t rows = 0;       // product of the outer extents
  int64_t rows_per_tile = 1, tiles_per_row = 1, tiles = 0;
  int64_t extent[kMaxOuter] = {};
  int64_t src_stride[kMaxOuter] = {}, dst_stride[kMaxOuter] = {};  // bytes
};

// The plan of a copy of `extent` elements of `elem_size` bytes between two
// strided views: from src (the box's first element) with element strides
// src_strides to dst with dst_strides. Returns false when the box has more
// dimensions than merging leaves room for (never for rank <= 8).
inline bool make_strided_box(const void *src, const Shape &src_strides, void *dst,
                             const Shape &dst_strides, const Shape &extent, size_t elem_size,
                             Box &b) {
  b = Box{};
  const size_t nd = extent.size();
  if (nd > 32) return false;
  int64_t elements = 1;
  for (int64_t e : extent) elements *= e;
  if (elements <= 0) return true;  // nothing to copy: no tiles
  struct Dim { int64_t extent, s, d; };
  Dim dims[32];
  int n = 0;
  for (size_t i = nd; i-- > 0;)
    if (extent[i] != 1) dims[n++] = {extent[i], src_strides[i], dst_strides[i]};  // innermost first
  const auto es = static_cast<int64_t>(elem_size);
  b.src = static_cast<const unsigned char *>(src);
  b.dst = static_cast<unsigned char *>(dst);
  // The contiguous run: inner dimensions both sides walk densely.
  int64_t run = 1;
  int k = 0;
  while (k < n && dims[k].s == run && dims[k].d == run) run *= dims[k++].extent;
  // The rest, outermost first, neighbours merged where both sides allow.
  Dim outer[32];
  int no = 0;
  for (int i = n; i-- > k;) {
    if (no > 0 && outer[no - 1].s == dims[i].s * dims[i].extent &&
        outer[no - 1].d == dims[i].d * dims[i].extent) {
      outer[no - 1] = {outer[no - 1].extent * dims[i].extent, dims[i].s, dims[i].d};
      continue;
    }
    outer[no++] = dims[i];
  }
  if (no > kMaxOuter) return false;
  const int64_t run_bytes = run * es;
  uint64_t align = reinterpret_cast<uintptr_t>(b.src) | reinterpret_cast<uintptr_t>(b.dst) |
                   static_cast<uint64_t>(run_bytes);
  b.nouter = no;
  b.rows = 1;
  for (int i = 0; i < no; ++i) {
    b.extent[i] = outer[i].extent;
    b.src_stride[i] = outer[i].s * es;
    b.dst_stride[i] = outer[i].d * es;
    align |= static_cast<uint64_t>(b.src_stride[i]) | static_cast<uint64_t>(b.dst_stride[i]);
    b.rows *= outer[i].extent;
  }
  b.width = 16;
  while (b.width > 1 && align % static_cast<uint64_t>(b.width) != 0) b.width /= 2;
  b.words = run_bytes / b.width;
  if (b.words <= kThreads) {  // short rows: several to a tile
    b.rows_per_tile = kThreads / b.words;
    b.tiles_per_row = 1;
    b.tiles = (b.rows + b.rows_per_tile - 1) / b.rows_per_tile;
  } else {  // long rows: each cut into tiles of kThreads * kUnroll words
    b.rows_per_tile = 1;
    b.tiles_per_row = (b.words + kThreads * kUnroll - 1) / (kThreads * kUnroll);
    b.tiles = b.rows * b.tiles_per_row;
  }
  return true;
}

// The same for the box at src_offset of a dense row-major buffer of shape
// src_shape at `src` and the box at dst_offset of one of dst_shape at `dst`.
inline bool make_box(const void *src, const Shape &src_shape, const Shape &src_offset, void *dst,
                     const Shape &dst_shape, const Shape &dst_offset, const Shape &extent,
                     size_t elem_size, Box &b) {
  const size_t nd = extent.size();
  if (nd > 32) {
    b = Box{};
    return false;
  }
  Shape ss(nd), ds(nd);
  int64_t s = 1, d = 1, so = 0, dso = 0;
  for (size_t i = nd; i-- > 0;) {
    ss[i] = s;
    ds[i] = d;
    so += src_offset[i] * s;
    dso += dst_offset[i] * d;
    s *= src_shape[i];
    d *= dst_shape[i];
  }
  const auto es = static_cast<int64_t>(elem_size);
  return make_strided_box(static_cast<const unsigned char *>(src) + so * es, ss,
                          static_cast<unsigned char *>(dst) + dso * es, ds, extent, elem_size, b);
}

// Words of `width` bytes: the GPU's vector types there, bytes here.
template <int W>
struct Word {
  unsigned char b[W];
};
#if defined(__CUDA_ARCH__)
template <> struct Word<16> { uint4 v; };
template <> struct Word<8> { uint2 v; };
template <> struct Word<4> { uint32_t v; };
template <> struct Word<2> { uint16_t v; };
#endif

template <int W>
SPMD_HD Word<W> load_word(const unsigned char *p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const Word<W> *>(p);
#else
  Word<W> w;
  std::memcpy(&w, p, W);
  return w;
#endif
}

template <int W>
SPMD_HD void store_word(unsigned char *p, const Word<W> &w) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<Word<W> *>(p) = w;
#else
  std::memcpy(p, &w, W);
#endif
}

// Up to `count` (<= kUnroll) words `step` apart from `word` on, below
// `words`: every load issued before the first store, so that a thread has
// its whole share in flight at once.
template <int W>
SPMD_HD void copy_words(const unsigned char *s, unsigned char *d, int64_t word, int64_t step,
                        int count, int64_t words) {
  Word<W> v[kUnroll];
  SPMD_UNROLL
  for (int u = 0; u < kUnroll; ++u)
    if (u < count && word + u * step < words) v[u] = load_word<W>(s + (word + u * step) * W);
  SPMD_UNROLL
  for (int u = 0; u < kUnroll; ++u)
    if (u < count && word + u * step < words) store_word<W>(d + (word + u * step) * W, v[u]);
}

// Thread t's share of tile `tile` of box b.
SPMD_HD void copy_tile(const Box &b, int64_t tile, int t) {
  int64_t row, word, step = 0;
  int count = 1;
  if (b.tiles_per_row == 1 && b.words <= kThreads) {
    const int64_t local = t / b.words;
    if (local >= b.rows_per_tile) return;
    row = tile * b.rows_per_tile + local;
    word = t - local * b.words;
  } else {
    row = tile / b.tiles_per_row;
    word = (tile - row * b.tiles_per_row) * (kThreads * kUnroll) + t;
    step = kThreads;
    count = kUnroll;
  }
  if (row >= b.rows) return;
  int64_t so = 0, dof = 0, r = row;
  for (int d = b.nouter - 1; d >= 0; --d) {
    const int64_t q = d > 0 ? r / b.extent[d] : 0;
    const int64_t i = d > 0 ? r - q * b.extent[d] : r;
    so += i * b.src_stride[d];
    dof += i * b.dst_stride[d];
    r = q;
  }
  const unsigned char *s = b.src + so;
  unsigned char *dp = b.dst + dof;
  switch (b.width) {
    case 16: return copy_words<16>(s, dp, word, step, count, b.words);
    case 8: return copy_words<8>(s, dp, word, step, count, b.words);
    case 4: return copy_words<4>(s, dp, word, step, count, b.words);
    case 2: return copy_words<2>(s, dp, word, step, count, b.words);
    default: return copy_words<1>(s, dp, word, step, count, b.words);
  }
}

}  // namespace spmd::dev::copy
