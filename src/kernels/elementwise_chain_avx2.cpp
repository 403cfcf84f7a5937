// The float32 chains on AVX2 with FMA (compiled with -mavx2 -mfma
// -ffp-contract=off): eight lanes.
#include "kernels/elementwise_chain_simd.hpp"

namespace spmd::ew::lanes {

bool run_chain_f32_avx2(const Chain &chain, size_t count, void *out, const void *const in[3]) {
  return run_chain<simd::Avx2>(chain, count, out, in);
}

}  // namespace spmd::ew::lanes
