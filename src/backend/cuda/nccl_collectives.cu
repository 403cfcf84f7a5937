// The CUDA platform's collectives over NCCL (see the header).
#include "backend/cuda/nccl_collectives.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "backend/cuda/check.hpp"
#include "backend/cuda/collective_kernels.hpp"
#include "backend/cuda/collective_steps.hpp"
#include "backend/cuda/strided_copy.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"

namespace spmd::cuda {

namespace {

using namespace std::chrono_literals;

// NCCL 2.30 takes several ranks on one GPU, behind NCCL_MULTI_RANK_GPU_ENABLE.
constexpr int kMultiRankVersion = 23000;
constexpr size_t kAlign = 256;
constexpr size_t kNone = SIZE_MAX;
constexpr auto kPoll = 100ms;    // the watchdog's period while work is in flight
constexpr auto kLeaveWait = 1s;  // for queuing threads to leave a failed group
constexpr auto kAbortWait = 5s;  // for ncclCommAbort, before giving up on it

void *address(const Place &p) { return reinterpret_cast<void *>(p.ptr.bits); }

char *at(void *base, size_t bytes) { return static_cast<char *>(base) + bytes; }
const char *at(const void *base, size_t bytes) { return static_cast<const char *>(base) + bytes; }

std::string version_text(int v) {
  // NCCL_VERSION(X, Y, Z) is X*10000 + Y*100 + Z from 2.9, X*1000 + Y*100 + Z before.
  if (v >= 10000) return cat(v / 10000, ".", v % 10000 / 100, ".", v % 100);
  return cat(v / 1000, ".", v % 1000 / 100, ".", v % 100);
}

std::string device_list(const std::vector<int> &ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += cat(i ? ", " : "", ids[i]);
  return s + "]";
}

void nccl_check(ncclResult_t r, ncclComm_t comm, const char *what) {
  if (r == ncclSuccess) return;
  const char *last = ncclGetLastError(comm);
  fail(SPMD_ERR_INTERNAL, "NCCL: ", what, ": ", ncclGetErrorString(r),
       last != nullptr && *last != '\0' ? cat(" (", last, ")") : std::string());
}

ncclDataType_t nccl_type(spmd_dtype dtype) {
  switch (dtype) {
    case SPMD_F32: return ncclFloat32;
    case SPMD_F64: return ncclFloat64;
    case SPMD_F16: return ncclFloat16;
    case SPMD_BF16: return ncclBfloat16;
    case SPMD_I32: return ncclInt32;
    case SPMD_I64: return ncclInt64;
    case SPMD_U32: return ncclUint32;
    case SPMD_I8: return ncclInt8;
    case SPMD_U8:
    case SPMD_BOOL: return ncclUint8;  // bool max and min are any and all of 0/1 bytes
    // NCCL has no 16-bit integers: moved as 16-bit floats (gathers, all-to-all
    // and permutes copy bits), never reduced as them (nccl_reduces).
    case SPMD_I16:
    case SPMD_U16: return ncclFloat16;
    default: fail(SPMD_ERR_INTERNAL, "NCCL collective of unknown dtype ", static_cast<int>(dtype));
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  return op == ReduceOp::Sum ? ncclSum : op == ReduceOp::Max ? ncclMax : ncclMin;
}

// Whether NCCL's reductions take the dtype: not a sum of bools, nor the
// 16-bit integers NCCL lacks (the host path reduces those).
bool nccl_reduces(spmd_dtype d, ReduceOp op) {
  if (d == SPMD_I16 || d == SPMD_U16) return false;
  return !(d == SPMD_BOOL && op == ReduceOp::Sum);
}

bool float_dtype(spmd_dtype d) {
  return d == SPMD_F32 || d == SPMD_F64 || d == SPMD_F16 || d == SPMD_BF16;
}

// Max and min of floats carry a NaN flag per element beside NCCL's result.
bool needs_nan_flags(const CollectiveCall &c) {
  return c.op != ReduceOp::Sum && float_dtype(c.dtype) &&
         (c.kind == Transport::AllReduce || c.kind == Transport::ReduceScatter);
}

// ---- NaN flags ----

template <typename U>
struct NanBits {
  U abs_mask, inf, quiet_nan;
};

template <typename U>
__global__ void nan_flags_kernel(const U *in, uint8_t *flags, int64_t count, NanBits<U> b) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    flags[i] = (in[i] & b.abs_mask) > b.inf ? 1 : 0;
}

template <typename U>
__global__ void nan_fixup_kernel(U *out, const uint8_t *flags, int64_t count, NanBits<U> b) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    if (flags[i]) out[i] = b.quiet_nan;
}

unsigned blocks_for(int64_t count) {
  const int64_t b = (count + 255) / 256;
  return static_cast<unsigned>(b < 2048 ? b : 2048);
}

// Calls f(NanBits<U>) for a float dtype's bits.
template <typename F>
void with_nan_bits(spmd_dtype dtype, F &&f) {
  switch (dtype) {
    case SPMD_F32: return f(NanBits<uint32_t>{0x7fffffffu, 0x7f800000u, 0x7fc00000u});
    case SPMD_F64:
      return f(
          NanBits<uint64_t>{0x7fffffffffffffffull, 0x7ff0000000000000ull, 0x7ff8000000000000ull});
    case SPMD_F16: return f(NanBits<uint16_t>{0x7fff, 0x7c00, 0x7e00});
    case SPMD_BF16: return f(NanBits<uint16_t>{0x7fff, 0x7f80, 0x7fc0});
    default: fail(SPMD_ERR_INTERNAL, "NaN flags of ", dtype_name(dtype));
  }
}

// flags[i] = in[i] is a NaN; count > 0.
void queue_nan_flags(spmd_dtype dtype, const void *in, uint8_t *flags, int64_t count,
                     cudaStream_t stream) {
  with_nan_bits(dtype, [&](auto bits) {
    using U = decltype(bits.inf);
    nan_flags_kernel<U>
        <<<blocks_for(count), 256, 0, stream>>>(static_cast<const U *>(in), flags, count, bits);
  });
  check(cudaGetLastError(), "NaN flag kernel");
}

// out[i] = the quiet NaN where flags[i]; count > 0.
void queue_nan_fixup(spmd_dtype dtype, void *out, const uint8_t *flags, int64_t count,
                     cudaStream_t stream) {
  with_nan_bits(dtype, [&](auto bits) {
    using U = decltype(bits.inf);
    nan_fixup_kernel<U>
        <<<blocks_for(count), 256, 0, stream>>>(static_cast<U *>(out), flags, count, bits);
  });
  check(cudaGetLastError(), "NaN fix-up kernel");
}

// ---- plans ----

// The members of a GroupCall seen from one of them.
class GroupCallView final : public GroupView {
 public:
  GroupCallView(const GroupCall &g, size_t rank) : g_(g), rank_(rank) {}
  const GroupIdentity &identity() const override { return g_.identity; }
  size_t size() const override { return g_.slots.size(); }
  size_t rank() const override { return rank_; }
  const CollSlot &slot(size_t member) const override { return g_.slots[member]; }

 private:
  const GroupCall &g_;
  size_t rank_;
};

struct Layout {
  size_t total = 0;
  size_t add(size_t bytes) {
    const size_t off = (total + kAlign - 1) / kAlign * kAlign;
    total = off + bytes;
    return off;
  }
};

// One member's NCCL part, worked out from its call and its group's slots
// alone, so that every member's plan agrees with its peers'.
struct Plan {
  bool nccl = false;
  size_t scratch = 0;  // bytes asked of the caller, alignment slack included
  // all-reduce, reduce-scatter
  int64_t count = 0;       // elements of the input
  int64_t recv_count = 0;  // reduce-scatter: elements of the output
  size_t flags = kNone;    // NaN flags of the input (all-reduce: reduced in place)
  size_t flags_out = kNone;
  // all-gather (when the output is not empty)
  bool gather = false;
  bool even = true;           // every block as long
  bool packed = true;         // the output is the blocks in rank order
  std::vector<size_t> bytes;  // each member's block
  std::vector<size_t> block;  // where it goes: in the output (packed) or in scratch
  // all-to-all: the piece sent to and received from each member, and where
  // the ones that are not one dense run are staged (kNone: in place)
  std::vector<AllToAllPiece> sends, recvs;
  std::vector<size_t> send_at, recv_at;
};

size_t elements_bytes(const Shape &s, size_t es) {
  return static_cast<size_t>(shape_elements(s)) * es;
}

Plan make_plan(const CollectiveCall &c, const GroupView &g,
               const std::vector<CollectiveCall> *peers) {
  Plan p;
  const size_t n = g.size(), me = g.rank(), es = dtype_size(c.dtype);
  Layout s;
  switch (c.kind) {
    case Transport::AllReduce:
      p.nccl = nccl_reduces(c.dtype, c.op);
      p.count = shape_elements(c.out_shape);
      if (needs_nan_flags(c) && p.count > 0) p.flags = s.add(static_cast<size_t>(p.count));
      break;
    case Transport::ReduceScatter: {
      const Shape &shape = g.slot(me).in_shape;
      const size_t ax = static_cast<size_t>(c.axis);
      const int64_t dim = shape[ax], nn = static_cast<int64_t>(n);
      int64_t outer = 1, inner = 1;
      for (size_t d = 0; d < ax; ++d) outer *= shape[d];
      for (size_t d = ax + 1; d < shape.size(); ++d) inner *= shape[d];
      // NCCL scatters equal leading blocks in rank order: the host's chunks
      // when nothing precedes the dimension and it splits evenly (untiled:
      // one row each).
      p.nccl = nccl_reduces(c.dtype, c.op) && outer <= 1 && (c.tiled ? dim % nn == 0 : dim == nn);
      if (!p.nccl) break;
      p.count = shape_elements(shape);
      p.recv_count = outer == 0 ? 0 : dim / nn * inner;
      if (needs_nan_flags(c) && p.recv_count > 0) {
        p.flags = s.add(static_cast<size_t>(p.count));
        p.flags_out = s.add(static_cast<size_t>(p.recv_count));
      }
      break;
    }
    case Transport::AllGather: {
      p.nccl = true;
      if (shape_elements(c.out_shape) == 0) break;
      p.gather = true;
      p.bytes.resize(n);
      for (size_t r = 0; r < n; ++r) {
        p.bytes[r] = elements_bytes(g.slot(r).in_shape, es);
        p.even = p.even && p.bytes[r] == p.bytes[0];
      }
      for (int64_t d = 0; d < c.axis; ++d)
        p.packed = p.packed && c.out_shape[static_cast<size_t>(d)] == 1;
      p.block.assign(n, 0);
      if (p.packed) {
        for (size_t r = 1; r < n; ++r) p.block[r] = p.block[r - 1] + p.bytes[r - 1];
      } else if (p.even) {
        const size_t base = s.add(n * p.bytes[0]);
        for (size_t r = 0; r < n; ++r) p.block[r] = base + r * p.bytes[0];
      } else {
        for (size_t r = 0; r < n; ++r)
          if (r != me && p.bytes[r] > 0) p.block[r] = s.add(p.bytes[r]);
      }
      break;
    }
    case Transport::AllToAll: {
      p.nccl = true;
      p.sends.resize(n);
      p.send_at.assign(n, kNone);
      p.recv_at.assign(n, kNone);
      for (size_t j = 0; j < n; ++j) {
        p.sends[j] = all_to_all_send(c, g.slot(me).in_shape, n, j);
        const size_t bytes = elements_bytes(p.sends[j].ext, es);
        if (j != me && bytes > 0 && !dense_view(p.sends[j].ext, p.sends[j].from.strides))
          p.send_at[j] = s.add(bytes);
      }
      p.recvs.reserve(n);
      for_each_all_to_all_receive(
          c, n, me, [&](size_t j) -> const Shape & { return g.slot(j).in_shape; },
          [&](size_t j, const AllToAllPiece &piece) {
            p.recvs.push_back(piece);
            const size_t bytes = elements_bytes(piece.ext, es);
            if (j != me && bytes > 0 && !dense_view(piece.ext, piece.to.strides))
              p.recv_at[j] = s.add(bytes);
          });
      break;
    }
    case Transport::Permute: p.nccl = peers != nullptr; break;
  }
  p.scratch = s.total > 0 ? s.total + kAlign : 0;
  return p;
}

// ---- one member's part: before the NCCL group, inside it, after it ----

struct Member {
  const CollectiveCall *call;
  const GroupView *group;
  const std::vector<CollectiveCall> *peers;  // every member's call, or null
  LogicalDevice *device;
  ncclComm_t comm;
  Plan plan;
  DeviceScratch given;
  char *scratch = nullptr;  // `given`, aligned

  const void *in() const { return address(group->slot(group->rank()).in); }
  void *out() const { return address(call->out); }
  cudaStream_t stream() const { return device->stream; }
};

// Kernels and copies that must precede the NCCL work on the stream.
void before(Member &m) {
  const CollectiveCall &c = *m.call;
  const Plan &p = m.plan;
  const size_t me = m.group->rank(), n = m.group->size(), es = dtype_size(c.dtype);
  switch (c.kind) {
    case Transport::AllReduce:
    case Transport::ReduceScatter:
      if (p.flags != kNone)
        queue_nan_flags(c.dtype, m.in(), reinterpret_cast<uint8_t *>(m.scratch + p.flags), p.count,
                        m.stream());
      break;
    case Transport::AllGather:
      // A lone member's own block, where the blocks travel pair by pair.
      if (p.gather && p.packed && !p.even && p.bytes[me] > 0)
        check(cudaMemcpyAsync(at(m.out(), p.block[me]), m.in(), p.bytes[me], cudaMemcpyDefault,
                              m.stream()),
              "cudaMemcpyAsync (all-gather)");
      break;
    case Transport::AllToAll:
      for (size_t j = 0; j < n; ++j) {
        const AllToAllPiece &piece = p.sends[j];
        if (shape_elements(piece.ext) == 0) continue;
        const void *from = at(m.in(), static_cast<size_t>(piece.from.offset) * es);
        if (j == me)
          queue_strided_copy(piece.ext, from, piece.from.strides,
                             at(m.out(), static_cast<size_t>(p.recvs[me].to.offset) * es),
                             p.recvs[me].to.strides, es, m.stream());
        else if (p.send_at[j] != kNone)
          queue_strided_copy(piece.ext, from, piece.from.strides, m.scratch + p.send_at[j],
                             host::dense_strides(piece.ext), es, m.stream());
      }
      break;
    case Transport::Permute: {
      const size_t bytes = elements_bytes(c.out_shape, es);
      if (bytes == 0) break;
      if (c.source < 0)
        check(cudaMemsetAsync(m.out(), 0, bytes, m.stream()), "cudaMemsetAsync (permute)");
      else if (static_cast<size_t>(c.source) == me)
        check(cudaMemcpyAsync(m.out(), m.in(), bytes, cudaMemcpyDefault, m.stream()),
              "cudaMemcpyAsync (permute)");
      break;
    }
  }
}

// The NCCL calls, between ncclGroupStart and ncclGroupEnd.
void issue(Member &m) {
  const CollectiveCall &c = *m.call;
  const Plan &p = m.plan;
  const size_t me = m.group->rank(), n = m.group->size(), es = dtype_size(c.dtype);
  const ncclComm_t comm = m.comm;
  const cudaStream_t st = m.stream();
  switch (c.kind) {
    case Transport::AllReduce:
      if (p.count == 0) break;
      nccl_check(ncclAllReduce(m.in(), m.out(), static_cast<size_t>(p.count), nccl_type(c.dtype),
                               nccl_op(c.op), comm, st),
                 comm, "ncclAllReduce");
      if (p.flags != kNone)
        nccl_check(ncclAllReduce(m.scratch + p.flags, m.scratch + p.flags,
                                 static_cast<size_t>(p.count), ncclUint8, ncclMax, comm, st),
                   comm, "ncclAllReduce (NaN flags)");
      break;
    case Transport::ReduceScatter:
      if (p.recv_count == 0) break;
      nccl_check(ncclReduceScatter(m.in(), m.out(), static_cast<size_t>(p.recv_count),
                                   nccl_type(c.dtype), nccl_op(c.op), comm, st),
                 comm, "ncclReduceScatter");
      if (p.flags != kNone)
        nccl_check(
            ncclReduceScatter(m.scratch + p.flags, m.scratch + p.flags_out,
                              static_cast<size_t>(p.recv_count), ncclUint8, ncclMax, comm, st),
            comm, "ncclReduceScatter (NaN flags)");
      break;
    case Transport::AllGather: {
      if (!p.gather) break;
      auto dest = [&](size_t r) -> void * {
        return p.packed ? at(m.out(), p.block[r]) : m.scratch + p.block[r];
      };
      if (p.even) {
        nccl_check(ncclAllGather(m.in(), dest(0), p.bytes[me], ncclUint8, comm, st), comm,
                   "ncclAllGather");
        break;
      }
      for (size_t r = 0; r < n; ++r) {
        if (r == me) continue;
        if (p.bytes[r] > 0)
          nccl_check(ncclRecv(dest(r), p.bytes[r], ncclUint8, static_cast<int>(r), comm, st), comm,
                     "ncclRecv (all-gather)");
        if (p.bytes[me] > 0)
          nccl_check(ncclSend(m.in(), p.bytes[me], ncclUint8, static_cast<int>(r), comm, st), comm,
                     "ncclSend (all-gather)");
      }
      break;
    }
    case Transport::AllToAll:
      for (size_t j = 0; j < n; ++j) {
        if (j == me) continue;
        const AllToAllPiece &out_piece = p.sends[j], &in_piece = p.recvs[j];
        const size_t send_bytes = elements_bytes(out_piece.ext, es);
        const size_t recv_bytes = elements_bytes(in_piece.ext, es);
        if (send_bytes > 0) {
          const void *from = p.send_at[j] != kNone
                                 ? static_cast<const void *>(m.scratch + p.send_at[j])
                                 : at(m.in(), static_cast<size_t>(out_piece.from.offset) * es);
          nccl_check(ncclSend(from, send_bytes, ncclUint8, static_cast<int>(j), comm, st), comm,
                     "ncclSend (all-to-all)");
        }
        if (recv_bytes > 0) {
          void *to = p.recv_at[j] != kNone
                         ? static_cast<void *>(m.scratch + p.recv_at[j])
                         : at(m.out(), static_cast<size_t>(in_piece.to.offset) * es);
          nccl_check(ncclRecv(to, recv_bytes, ncclUint8, static_cast<int>(j), comm, st), comm,
                     "ncclRecv (all-to-all)");
        }
      }
      break;
    case Transport::Permute: {
      const size_t bytes = elements_bytes(c.out_shape, es);
      if (c.source >= 0 && static_cast<size_t>(c.source) != me && bytes > 0)
        nccl_check(ncclRecv(m.out(), bytes, ncclUint8, static_cast<int>(c.source), comm, st), comm,
                   "ncclRecv (permute)");
      for (size_t r = 0; r < n; ++r) {
        const CollectiveCall &peer = (*m.peers)[r];
        if (r == me || peer.source != static_cast<int64_t>(me)) continue;
        const size_t peer_bytes = elements_bytes(peer.out_shape, es);
        if (peer_bytes > 0)
          nccl_check(ncclSend(m.in(), peer_bytes, ncclUint8, static_cast<int>(r), comm, st), comm,
                     "ncclSend (permute)");
      }
      break;
    }
  }
}

// Kernels and copies that follow the NCCL work on the stream.
void after(Member &m) {
  const CollectiveCall &c = *m.call;
  const Plan &p = m.plan;
  const size_t me = m.group->rank(), n = m.group->size(), es = dtype_size(c.dtype);
  switch (c.kind) {
    case Transport::AllReduce:
      if (p.flags != kNone)
        queue_nan_fixup(c.dtype, m.out(), reinterpret_cast<uint8_t *>(m.scratch + p.flags), p.count,
                        m.stream());
      break;
    case Transport::ReduceScatter:
      if (p.flags_out != kNone)
        queue_nan_fixup(c.dtype, m.out(), reinterpret_cast<uint8_t *>(m.scratch + p.flags_out),
                        p.recv_count, m.stream());
      break;
    case Transport::AllGather: {
      if (!p.gather || p.packed) break;
      // The native gather's copies place the staged blocks (and this
      // member's own, from its input).
      std::vector<DeviceSlot> slots(n);
      for (size_t r = 0; r < n; ++r)
        slots[r] = {r == me ? m.in() : m.scratch + p.block[r], &m.group->slot(r).in_shape, nullptr};
      queue_native_phase(c, m.out(), slots, me, 0, false, m.stream());
      break;
    }
    case Transport::AllToAll:
      for (size_t j = 0; j < n; ++j) {
        if (p.recv_at[j] == kNone) continue;
        const AllToAllPiece &piece = p.recvs[j];
        queue_strided_copy(piece.ext, m.scratch + p.recv_at[j], host::dense_strides(piece.ext),
                           at(m.out(), static_cast<size_t>(piece.to.offset) * es), piece.to.strides,
                           es, m.stream());
      }
      break;
    case Transport::Permute: break;
  }
}

char *aligned_scratch(const DeviceScratch &s, const Plan &p, const LogicalDevice &d) {
  if (p.scratch == 0) return nullptr;
  if (s.ptr == nullptr || s.bytes < p.scratch)
    fail(SPMD_ERR_INTERNAL, d.label(), ": NCCL collective given ", s.bytes,
         " bytes of scratch, needs ", p.scratch);
  const uintptr_t a = (reinterpret_cast<uintptr_t>(s.ptr) + kAlign - 1) / kAlign * kAlign;
  return reinterpret_cast<char *>(a);
}

// ncclGroupStart .. ncclGroupEnd; ended on the way out if an error cut the
// group short (NCCL's group state is per thread and must not stay open).
class NcclGroup {
 public:
  NcclGroup() { nccl_check(ncclGroupStart(), nullptr, "ncclGroupStart"); }
  ~NcclGroup() {
    if (open_) ncclGroupEnd();
  }
  void end() {
    open_ = false;
    nccl_check(ncclGroupEnd(), nullptr, "ncclGroupEnd");
  }

 private:
  bool open_ = true;
};

}  // namespace

std::string nccl_unusable_reason(const std::vector<const LogicalDevice *> &members) {
  int version = 0;
  const ncclResult_t r = ncclGetVersion(&version);
  if (r != ncclSuccess) return cat("NCCL cannot say its version (", ncclGetErrorString(r), ")");
  for (size_t a = 0; a < members.size(); ++a)
    for (size_t b = a + 1; b < members.size(); ++b) {
      if (members[a]->gpu->ordinal != members[b]->gpu->ordinal) continue;
      const std::string both =
          cat(members[a]->label(), " and ", members[b]->label(), " are on the same GPU, ");
      if (version < kMultiRankVersion)
        return cat(both, "and NCCL ", version_text(version),
                   " refuses several ranks on one GPU (NCCL ", version_text(kMultiRankVersion),
                   " and newer take them with NCCL_MULTI_RANK_GPU_ENABLE=1)");
      // NCCL reads the variable as an integer; anything but 0 enables it.
      const char *env = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
      char *end = nullptr;
      const long long on = env != nullptr ? std::strtoll(env, &end, 0) : 0;
      if (env == nullptr || end == env || on == 0)
        return cat(both, "which NCCL ", version_text(version),
                   " takes only with NCCL_MULTI_RANK_GPU_ENABLE=1 (it is ",
                   env == nullptr ? std::string("unset") : cat("'", env, "'"), ")");
      return {};
    }
  return {};
}

bool nccl_expresses(const CollectiveCall &call, const GroupView &group) {
  return make_plan(call, group, nullptr).nccl;
}

bool nccl_expresses(const GroupCall &group) {
  for (size_t r = 0; r < group.calls.size(); ++r)
    if (!make_plan(group.calls[r], GroupCallView(group, r), &group.calls).nccl) return false;
  return true;
}

size_t nccl_scratch_bytes(const CollectiveCall &call, const GroupView &group) {
  return make_plan(call, group, nullptr).scratch;
}

size_t nccl_scratch_bytes(const GroupCall &group, size_t rank) {
  return make_plan(group.calls[rank], GroupCallView(group, rank), &group.calls).scratch;
}

// ---- communicators, their failures, the watchdog ----

struct NcclCollectives::Impl {
  // The communicators of one device list, one per rank. Their state is
  // under the group's own lock, which the abort thread also takes.
  struct Group {
    std::vector<int> ids;
    std::vector<ncclComm_t> comms;
    std::mutex mu;
    std::condition_variable cv;
    bool ready = false;
    std::string failure;  // set: failed, its communicators aborted (or never made)
    int busy = 0;         // threads using the communicators
  };
  // The last NCCL work queued on a device for a group: in flight until the
  // event completes.
  struct Watch {
    std::shared_ptr<Group> group;
    cudaEvent_t event = nullptr;
    uint64_t generation = 0;
    bool active = false;
  };

  std::vector<LogicalDevice *> devices;
  mutable std::mutex mu;  // groups and watches; taken before any group's lock
  std::condition_variable wake;
  std::map<std::vector<int>, std::shared_ptr<Group>> groups;
  std::map<std::pair<const Group *, int>, Watch> watches;
  bool stopping = false;
  std::thread watchdog;

  std::string label(int id) const {
    if (id >= 0 && static_cast<size_t>(id) < devices.size())
      return devices[static_cast<size_t>(id)]->label();
    return cat("device ", id);
  }

  LogicalDevice &dev(int id) {
    if (id < 0 || static_cast<size_t>(id) >= devices.size())
      fail(SPMD_ERR_INTERNAL, "NCCL collective on device ", id, " of ", devices.size());
    return *devices[static_cast<size_t>(id)];
  }

  // The group's communicators, made by the first caller; the others wait.
  // The first group starts the watchdog.
  std::shared_ptr<Group> group_for(const std::vector<int> &ids) {
    std::shared_ptr<Group> g;
    bool make = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!watchdog.joinable()) {
        try {
          watchdog = std::thread([this] { run_watchdog(); });
        } catch (const std::system_error &) {
          fail(SPMD_ERR_OUT_OF_MEMORY, "cannot start the NCCL collectives' watchdog thread");
        }
      }
      auto &slot = groups[ids];
      if (!slot) {
        slot = std::make_shared<Group>();
        slot->ids = ids;
        make = true;
      }
      g = slot;
    }
    if (make) {
      std::string why;
      try {
        g->comms = make_comms(ids);
      } catch (const std::exception &e) {
        why = e.what();
      }
      std::lock_guard<std::mutex> lock(g->mu);
      g->ready = why.empty();
      if (!why.empty()) g->failure = why;
      g->cv.notify_all();
    } else {
      std::unique_lock<std::mutex> lock(g->mu);
      g->cv.wait(lock, [&] { return g->ready || !g->failure.empty(); });
    }
    return g;
  }

  std::vector<ncclComm_t> make_comms(const std::vector<int> &ids) {
    std::vector<int> gpus;
    for (int id : ids) gpus.push_back(dev(id).gpu->ordinal);
    std::vector<ncclComm_t> comms(ids.size(), nullptr);
    int previous = -1;
    cudaGetDevice(&previous);
    const ncclResult_t r = ncclCommInitAll(comms.data(), static_cast<int>(ids.size()), gpus.data());
    if (previous >= 0) cudaSetDevice(previous);
    if (r != ncclSuccess) {
      const char *last = ncclGetLastError(nullptr);
      fail(SPMD_ERR_INTERNAL, "NCCL: cannot make the communicators of devices ", device_list(ids),
           ": ", ncclGetErrorString(r),
           last != nullptr && *last != '\0' ? cat(" (", last, ")") : std::string());
    }
    return comms;
  }

  // Marks the group in use; throws its failure.
  static void enter(Group &g) {
    std::lock_guard<std::mutex> lock(g.mu);
    if (!g.failure.empty()) throw Error(SPMD_ERR_INTERNAL, g.failure);
    ++g.busy;
  }
  static void leave(Group &g) {
    std::lock_guard<std::mutex> lock(g.mu);
    --g.busy;
    g.cv.notify_all();
  }

  // Records the group's failure and aborts its communicators, waiting a
  // few seconds at most: an abort that hangs is left to its thread.
  static void fail_group(const std::shared_ptr<Group> &g, const std::string &message) {
    {
      std::lock_guard<std::mutex> lock(g->mu);
      if (!g->failure.empty()) return;
      g->failure = message;
    }
    struct Done {
      std::mutex mu;
      std::condition_variable cv;
      bool finished = false;
    };
    auto done = std::make_shared<Done>();
    auto abort_all = [g, done] {
      {
        std::unique_lock<std::mutex> lock(g->mu);
        g->cv.wait_for(lock, kLeaveWait, [&] { return g->busy == 0; });
      }
      for (ncclComm_t comm : g->comms)
        if (comm != nullptr) ncclCommAbort(comm);
      std::lock_guard<std::mutex> lock(done->mu);
      done->finished = true;
      done->cv.notify_all();
    };
    try {
      std::thread(abort_all).detach();
    } catch (...) {
      abort_all();  // no thread to spare: abort here
      return;
    }
    std::unique_lock<std::mutex> lock(done->mu);
    done->cv.wait_for(lock, kAbortWait, [&] { return done->finished; });
  }

  // Marks the NCCL work just queued on `d` for `g` as in flight (not while
  // the stream is being captured into a graph: its events cannot be asked).
  void watch(const std::shared_ptr<Group> &g, LogicalDevice &d) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(d.stream, &capture), "cudaStreamIsCapturing");
    if (capture != cudaStreamCaptureStatusNone) return;
    std::lock_guard<std::mutex> lock(mu);
    Watch &w = watches[{g.get(), d.id}];
    if (w.event == nullptr) {
      w.group = g;
      check(cudaEventCreateWithFlags(&w.event, cudaEventDisableTiming), "cudaEventCreate");
    }
    check(cudaEventRecord(w.event, d.stream), "cudaEventRecord");
    ++w.generation;
    w.active = true;
    wake.notify_all();
  }

  void run_watchdog() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      bool active = false;
      for (auto &[key, w] : watches) active = active || w.active;
      if (!active) {
        wake.wait(lock);
        continue;
      }
      wake.wait_for(lock, kPoll);
      if (stopping) break;
      struct Probe {
        std::pair<const Group *, int> key;
        cudaEvent_t event;
        uint64_t generation;
        bool done;
      };
      std::vector<Probe> probes;
      for (auto &[key, w] : watches)
        if (w.active) probes.push_back({key, w.event, w.generation, false});
      std::vector<std::shared_ptr<Group>> polled;
      for (auto &[ids, g] : groups) {
        std::lock_guard<std::mutex> glock(g->mu);
        if (!g->ready || !g->failure.empty()) continue;
        ++g->busy;  // keeps an abort from freeing the communicators under the poll
        polled.push_back(g);
      }
      lock.unlock();
      for (Probe &p : probes) {
        const cudaError_t st = cudaEventQuery(p.event);
        p.done = st != cudaErrorNotReady;  // an error is the backend's event's to report
        if (st != cudaSuccess) cudaGetLastError();
      }
      std::vector<std::pair<std::shared_ptr<Group>, std::string>> failed;
      for (const auto &g : polled) {
        for (size_t r = 0; r < g->comms.size(); ++r) {
          ncclResult_t async = ncclSuccess;
          const ncclResult_t q = ncclCommGetAsyncError(g->comms[r], &async);
          if (q != ncclSuccess) async = q;
          if (async == ncclSuccess || async == ncclInProgress) continue;
          const char *last = ncclGetLastError(g->comms[r]);
          failed.emplace_back(
              g, cat(label(g->ids[r]), ": NCCL failed in a collective over devices ",
                     device_list(g->ids), " (rank ", r, "): ", ncclGetErrorString(async),
                     last != nullptr && *last != '\0' ? cat(" (", last, ")") : std::string(),
                     "; the group's communicators were aborted"));
          break;
        }
        leave(*g);
      }
      for (auto &[g, message] : failed) fail_group(g, message);
      lock.lock();
      for (const Probe &p : probes) {
        auto it = watches.find(p.key);
        if (it == watches.end()) continue;
        // Failed groups' work is over as far as the watchdog goes.
        bool failed_group = false;
        {
          std::lock_guard<std::mutex> glock(it->second.group->mu);
          failed_group = !it->second.group->failure.empty();
        }
        if ((p.done || failed_group) && it->second.generation == p.generation)
          it->second.active = false;
      }
    }
  }

  // Marks the NCCL work just queued on `d` for `g` as in flight. Tracking
  // is best effort: the work is queued whatever happens here.
  void watch_quietly(const std::shared_ptr<Group> &g, LogicalDevice &d) noexcept {
    try {
      DeviceGuard guard(d.gpu->ordinal);
      watch(g, d);
    } catch (...) {
      cudaGetLastError();
    }
  }

  // Queues members' work (each with its group in `owner`): the steps
  // before, the NCCL group, the steps after; then marks it in flight. An
  // error once the groups are entered aborts them, so that no peer that
  // queued its part waits forever for this one.
  void queue(std::vector<Member> &members, const std::vector<std::shared_ptr<Group>> &owner) {
    std::vector<std::shared_ptr<Group>> used;
    for (const auto &g : owner) {
      bool seen = false;
      for (const auto &u : used) seen = seen || u == g;
      if (!seen) used.push_back(g);
    }
    size_t entered = 0;
    try {
      for (; entered < used.size(); ++entered) enter(*used[entered]);
    } catch (...) {  // a group that failed before: its own error, nothing aborted again
      for (size_t i = 0; i < entered; ++i) leave(*used[i]);
      throw;
    }
    try {
      for (Member &m : members) {
        m.scratch = aligned_scratch(m.given, m.plan, *m.device);
        DeviceGuard guard(m.device->gpu->ordinal);
        before(m);
      }
      {
        NcclGroup group;
        for (Member &m : members) issue(m);
        group.end();
      }
      for (Member &m : members) {
        DeviceGuard guard(m.device->gpu->ordinal);
        after(m);
      }
    } catch (const std::exception &e) {
      for (const auto &g : used) leave(*g);
      const std::string message = cat("NCCL collective over devices ", device_list(used[0]->ids),
                                      " could not be queued: ", e.what());
      for (const auto &g : used) fail_group(g, message);
      throw;
    }
    for (const auto &g : used) leave(*g);
    for (size_t k = 0; k < members.size(); ++k) watch_quietly(owner[k], *members[k].device);
  }
};

NcclCollectives::NcclCollectives(std::vector<LogicalDevice *> devices)
    : impl_(std::make_unique<Impl>()) {
  impl_->devices = std::move(devices);
}

NcclCollectives::~NcclCollectives() {
  Impl &m = *impl_;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    m.stopping = true;
  }
  m.wake.notify_all();
  if (m.watchdog.joinable()) m.watchdog.join();
  for (auto &[ids, g] : m.groups) {
    {
      std::lock_guard<std::mutex> lock(g->mu);
      if (!g->ready || !g->failure.empty()) continue;  // never made, or aborted
    }
    bool idle = true;
    for (auto &[key, w] : m.watches)
      if (key.first == g.get() && w.active && cudaEventQuery(w.event) == cudaErrorNotReady)
        idle = false;
    cudaGetLastError();
    // Destroying waits for the communicators' work; work that may never end
    // is aborted instead.
    for (ncclComm_t comm : g->comms) {
      if (idle)
        ncclCommDestroy(comm);
      else
        ncclCommAbort(comm);
    }
  }
  for (auto &[key, w] : m.watches)
    if (w.event != nullptr) cudaEventDestroy(w.event);
}

bool NcclCollectives::queue_groups(const std::vector<GroupCall> &groups,
                                   const std::vector<std::vector<DeviceScratch>> &scratch) {
  Impl &m = *impl_;
  // NCCL runs all of it or none.
  std::vector<std::vector<Plan>> plans(groups.size());
  size_t total = 0;
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (size_t r = 0; r < groups[gi].calls.size(); ++r, ++total) {
      plans[gi].push_back(
          make_plan(groups[gi].calls[r], GroupCallView(groups[gi], r), &groups[gi].calls));
      if (!plans[gi].back().nccl) return false;
    }
  std::vector<GroupCallView> views;  // the members' views, kept in place
  views.reserve(total);
  std::vector<Member> members;
  std::vector<std::shared_ptr<Impl::Group>> owner;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const GroupCall &gc = groups[gi];
    std::shared_ptr<Impl::Group> g = m.group_for(gc.identity.devices);
    for (size_t r = 0; r < gc.calls.size(); ++r) {
      views.emplace_back(gc, r);
      members.push_back({&gc.calls[r], &views.back(), &gc.calls, &m.dev(gc.calls[r].device),
                         r < g->comms.size() ? g->comms[r] : nullptr, std::move(plans[gi][r]),
                         scratch.at(gi).at(r)});
      owner.push_back(g);
    }
  }
  m.queue(members, owner);
  return true;
}

bool NcclCollectives::queue_member(const CollectiveCall &call, const GroupView &group,
                                   DeviceScratch scratch) {
  Impl &m = *impl_;
  Plan plan = make_plan(call, group, nullptr);
  if (!plan.nccl) return false;
  LogicalDevice &d = m.dev(call.device);
  std::shared_ptr<Impl::Group> g = m.group_for(group.identity().devices);
  const size_t r = group.rank();
  std::vector<Member> members;
  members.push_back({&call, &group, nullptr, &d, r < g->comms.size() ? g->comms[r] : nullptr,
                     std::move(plan), scratch});
  m.queue(members, {g});
  return true;
}

std::string NcclCollectives::failure(const std::vector<int> &devices) const {
  std::shared_ptr<Impl::Group> g;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->groups.find(devices);
    if (it == impl_->groups.end()) return {};
    g = it->second;
  }
  std::lock_guard<std::mutex> lock(g->mu);
  return g->failure;
}

}  // namespace spmd::cuda
