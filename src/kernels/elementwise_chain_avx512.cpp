// The float32 chains on AVX-512 (compiled with -mavx512f -mavx512dq
// -ffp-contract=off): sixteen lanes, the same bits as eight.
#include "kernels/elementwise_chain_simd.hpp"

namespace spmd::ew::lanes {

bool run_chain_f32_avx512(const Chain &chain, size_t count, void *out, const void *const in[3]) {
  return run_chain<simd::Avx512>(chain, count, out, in);
}

}  // namespace spmd::ew::lanes
