// The CUDA platform's native collectives: the steps of collective_steps.hpp
// queued on the member's stream, reductions as n-way kernels over the
// members' buffers, copies as batches of strided copies, fills as memsets.
#include "backend/cuda/collective_kernels.hpp"

#include <cstdint>

#include "backend/cuda/check.hpp"
#include "backend/cuda/collective_steps.hpp"
#include "backend/cuda/strided_copy.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "kernels/device/collective_reduce.hpp"

namespace spmd::cuda {

namespace {

// Sources one launch takes, passed by value in the kernel's parameters: few
// (the common group sizes, a small parameter block) or many (16 KiB of
// pointers; CUDA 12.1 and later take up to 32 KiB on every GPU it runs).
// Longer lists go in several launches, each resuming from the output.
constexpr int kFewSources = 16;
constexpr int kManySources = 2048;
constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 2048;

template <int Cap>
struct ReduceArgs {
  void *out;
  int64_t count;       // elements (or 16-byte packs) written
  int64_t row;         // per row
  int64_t src_stride;  // between rows of a source
  int n;               // sources in this launch
  int resume;          // 1: the output holds the partial result of earlier sources
  const void *src[Cap];
};

// Source offset of output element k: rows of `row` elements, `src_stride`
// apart in the sources.
__device__ inline int64_t source_index(int64_t k, int64_t row, int64_t count, int64_t stride) {
  if (row == count) return k;
  const int64_t o = k / row;
  return o * stride + (k - o * row);
}

// One element per thread and step.
template <typename R, int Cap>
__global__ void reduce_kernel(const __grid_constant__ ReduceArgs<Cap> a) {
  using T = typename R::Elem;
  T *out = static_cast<T *>(a.out);
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < a.count;
       k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = source_index(k, a.row, a.count, a.src_stride);
    typename R::Acc acc;
    int r = 0;
    if (a.resume) {
      acc = R::resume(out[k]);
    } else {
      acc = R::start(static_cast<const T *>(a.src[0])[s]);
      r = 1;
    }
    for (; r < a.n; ++r) acc = R::step(acc, static_cast<const T *>(a.src[r])[s]);
    out[k] = R::finish(acc);
  }
}

// The same on 16-byte packs of elements (every pointer 16-byte aligned, rows
// and strides whole packs), each element of a pack combined as above.
template <typename T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];
};

template <typename R, int Cap>
__global__ void reduce_packs_kernel(const __grid_constant__ ReduceArgs<Cap> a) {
  using T = typename R::Elem;
  using P = Pack<T>;
  constexpr int V = P::kSize;
  P *out = static_cast<P *>(a.out);
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < a.count;
       k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = source_index(k, a.row, a.count, a.src_stride);
    typename R::Acc acc[V];
    int r = 0;
    if (a.resume) {
      const P o = out[k];
      for (int i = 0; i < V; ++i) acc[i] = R::resume(o.v[i]);
    } else {
      const P x = static_cast<const P *>(a.src[0])[s];
      for (int i = 0; i < V; ++i) acc[i] = R::start(x.v[i]);
      r = 1;
    }
    for (; r < a.n; ++r) {
      const P x = static_cast<const P *>(a.src[r])[s];
      for (int i = 0; i < V; ++i) acc[i] = R::step(acc[i], x.v[i]);
    }
    P o;
    for (int i = 0; i < V; ++i) o.v[i] = R::finish(acc[i]);
    out[k] = o;
  }
}

unsigned blocks_for(int64_t work) {
  const int64_t b = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// One launch over sources [first, first + n) of `srcs`, each moved by
// `shift` elements.
template <typename R, int Cap>
void launch_reduce(const void *const *srcs, size_t first, size_t n, int64_t shift, void *out,
                   int64_t count, int64_t row, int64_t stride, bool packs, cudaStream_t stream) {
  using T = typename R::Elem;
  ReduceArgs<Cap> a;
  a.out = static_cast<T *>(out) + shift;
  a.count = count;
  a.row = row;
  a.src_stride = stride;
  a.n = static_cast<int>(n);
  a.resume = first > 0;
  for (size_t r = 0; r < n; ++r) a.src[r] = static_cast<const T *>(srcs[first + r]) + shift;
  if (packs) {
    constexpr int V = Pack<T>::kSize;
    a.count /= V;
    a.row /= V;
    a.src_stride /= V;
    reduce_packs_kernel<R, Cap><<<blocks_for(a.count), kThreads, 0, stream>>>(a);
  } else {
    reduce_kernel<R, Cap><<<blocks_for(count), kThreads, 0, stream>>>(a);
  }
  check(cudaGetLastError(), "reduction kernel");
}

template <typename R>
void queue_reduce(const void *const *srcs, size_t n, void *out, int64_t count, int64_t row,
                  int64_t stride, cudaStream_t stream) {
  using T = typename R::Elem;
  if (!R::kResumable && n > static_cast<size_t>(kManySources))
    fail(SPMD_ERR_UNSUPPORTED, "a bfloat16 sum over more than ", kManySources,
         " members on the CUDA platform's native collectives");
  // Packs where every address is 16-byte aligned and rows are whole packs;
  // a single row's tail of fewer than a pack goes element by element.
  constexpr int64_t V = Pack<T>::kSize;
  bool packs = aligned16(out);
  for (size_t r = 0; r < n && packs; ++r) packs = aligned16(srcs[r]);
  const bool one_row = row == count;
  if (!one_row) packs = packs && row % V == 0 && stride % V == 0;
  const int64_t packed = packs ? (one_row ? count / V * V : count) : 0;
  const int64_t tail = count - packed;
  for (size_t first = 0; first < n;) {
    const size_t left = n - first;
    const size_t take = left < static_cast<size_t>(kManySources) ? left : kManySources;
    auto launch = [&](int64_t shift, int64_t elems, int64_t r, int64_t s, bool p) {
      if (take <= static_cast<size_t>(kFewSources))
        launch_reduce<R, kFewSources>(srcs, first, take, shift, out, elems, r, s, p, stream);
      else
        launch_reduce<R, kManySources>(srcs, first, take, shift, out, elems, r, s, p, stream);
    };
    if (packed > 0) launch(0, packed, one_row ? packed : row, one_row ? packed : stride, true);
    if (tail > 0) {
      if (one_row)
        launch(packed, tail, tail, tail, false);
      else
        launch(0, count, row, stride, false);
    }
    first += take;
  }
}

// Steps queued on one stream. Copies wait in a batch, launched together
// when a reduction or fill comes or the phase ends: a member's pieces from
// all its peers are one launch, not one per peer (on an H200, 8 members'
// all_to_all of 4 MiB pieces went from 0.27 to 0.55 of the copy rate).
// Large dense pieces still go by cudaMemcpyAsync each, which moved an
// all_gather's 32 MiB pieces faster than the batched kernel did.
class StreamSink final : public StepSink {
 public:
  explicit StreamSink(cudaStream_t stream) : stream_(stream) {}

  void reduce(spmd_dtype dtype, ReduceOp op, const void *const *srcs, size_t n, void *out,
              int64_t count, int64_t row, int64_t src_stride) override {
    flush();
    const bool known = dev::collective::visit_reduction(dtype, op, [&](auto reduction) {
      queue_reduce<decltype(reduction)>(srcs, n, out, count, row, src_stride, stream_);
    });
    if (!known)
      fail(SPMD_ERR_INTERNAL, "no reduction of ", dtype_name(dtype), " by ", static_cast<int>(op),
           " in the CUDA platform's collectives");
  }

  void copy(const Shape &ext, const void *src, const Shape &src_strides, void *dst,
            const Shape &dst_strides, size_t elem_size) override {
    copies_.push_back({ext, src, src_strides, dst, dst_strides, elem_size});
  }

  void zero(void *dst, size_t bytes) override {
    flush();
    check(cudaMemsetAsync(dst, 0, bytes, stream_), "cudaMemsetAsync (collective)");
  }

  void flush() {
    std::vector<StridedCopy> batch;
    for (const StridedCopy &c : copies_) {
      if (copies_.size() == 1 || large_and_dense(c))
        queue_strided_copy(c.ext, c.src, c.src_strides, c.dst, c.dst_strides, c.elem_size, stream_);
      else
        batch.push_back(c);
    }
    if (batch.size() == 1)
      queue_strided_copy(batch[0].ext, batch[0].src, batch[0].src_strides, batch[0].dst,
                         batch[0].dst_strides, batch[0].elem_size, stream_);
    else if (!batch.empty())
      queue_strided_copies(batch.data(), batch.size(), stream_);
    copies_.clear();
  }

 private:
  static constexpr int64_t kLargeCopyBytes = int64_t{16} << 20;

  static bool large_and_dense(const StridedCopy &c) {
    int64_t bytes = static_cast<int64_t>(c.elem_size);
    for (int64_t e : c.ext) bytes *= e;
    return bytes >= kLargeCopyBytes && dense_view(c.ext, c.src_strides) &&
           dense_view(c.ext, c.dst_strides);
  }

  cudaStream_t stream_;
  std::vector<StridedCopy> copies_;
};

}  // namespace

int native_phase_count(const CollectiveCall &call, bool reduce_whole) {
  return native_step_phases(call, reduce_whole);
}

void queue_native_phase(const CollectiveCall &call, void *out, const std::vector<DeviceSlot> &slots,
                        size_t rank, int phase, bool reduce_whole, cudaStream_t stream) {
  std::vector<MemberSlot> members(slots.size());
  for (size_t r = 0; r < slots.size(); ++r)
    members[r] = {slots[r].in, slots[r].in_shape, slots[r].out};
  StreamSink sink(stream);
  plan_native_phase(call, out, members, rank, phase, reduce_whole, sink);
  sink.flush();
}

}  // namespace spmd::cuda
