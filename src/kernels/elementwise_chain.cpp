#include "kernels/elementwise_chain.hpp"

#include <cstring>
#include <vector>

#include "base/dtype.hpp"
#include "kernels/elementwise_chain_lanes.hpp"
#include "kernels/vector_math.hpp"

namespace spmd::ew {

namespace lanes {

bool run_chain_f32(const Chain &chain, size_t count, void *out, const void *const in[3]) {
  // The vectors of the table's instruction set, so that the SLEEF functions
  // a chain calls are the table's (chosen once per process).
  static const int isa = [] {
    const char *name = vmath::table().isa;
    return std::strcmp(name, "avx512") == 0 ? 512 : std::strcmp(name, "avx2") == 0 ? 256 : 0;
  }();
  if (isa == 512) return run_chain_f32_avx512(chain, count, out, in);
  if (isa == 256) return run_chain_f32_avx2(chain, count, out, in);
  return false;
}

}  // namespace lanes

void run_chain(const Chain &chain, size_t count, void *out, const void *const in[3]) {
  const size_t nsteps = chain.steps.size();
  if (nsteps == 0 || count == 0) return;
  // Float32 chains of ops with vector forms: blocks of vectors, no tiles
  // of every step.
  if (lanes::run_chain_f32(chain, count, out, in)) return;
  // One tile of each intermediate result (the last step writes out), in
  // memory the thread keeps: fresh pages for every call would cost more
  // than the steps.
  const size_t tile_bytes = kChainTile * 8;
  thread_local std::vector<unsigned char> scratch;
  if (scratch.size() < tile_bytes * (nsteps - 1)) scratch.resize(tile_bytes * (nsteps - 1));
  unsigned char *const tiles = scratch.data();
  // The steps' descriptors, retargeted to each tile below: assigned into
  // the thread's own, whose vectors keep their room from call to call.
  thread_local std::vector<Params> params;
  if (params.size() < nsteps) params.resize(nsteps);
  for (size_t s = 0; s < nsteps; ++s) params[s] = chain.steps[s].params;
  for (size_t start = 0; start < count; start += kChainTile) {
    const size_t n = count - start < kChainTile ? count - start : kChainTile;
    for (size_t s = 0; s < nsteps; ++s) {
      const ChainStep &step = chain.steps[s];
      Params &p = params[s];
      p.shape.assign(1, static_cast<int64_t>(n));
      const void *args[3] = {nullptr, nullptr, nullptr};
      for (int k = 0; k < p.nin; ++k) {
        Operand &o = p.in[k];
        o.strides.assign(1, o.scalar ? 0 : 1);
        if (o.scalar) continue;
        const int f = step.from[k];
        args[k] = f >= 0 ? static_cast<const unsigned char *>(in[f]) + start * dtype_size(o.dtype)
                         : tiles + static_cast<size_t>(-f - 1) * tile_bytes;
      }
      void *dst = s + 1 == nsteps ? static_cast<unsigned char *>(out) + start * dtype_size(p.out)
                                  : tiles + s * tile_bytes;
      run(p, dst, args);
    }
  }
}

}  // namespace spmd::ew
