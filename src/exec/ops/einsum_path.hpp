// The order in which jnp.einsum contracts three or more operands: the path
// opt_einsum's "optimal" strategy finds (jnp.einsum's default, optimize=
// "auto", up to four operands), so that libspmd multiplies the same pairs in
// the same order and its sums round as JAX's do. No arrays: letters and
// sizes only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace spmd::ops::einsum_path {

// The most operands a path is searched for (opt_einsum's "optimal" serves
// jnp.einsum up to four; beyond, JAX turns to other searches).
constexpr size_t kMaxOperands = 4;

// One pairwise contraction in static single assignment ids: operands are
// 0 .. n-1, the result of step s is n + s.
using Step = std::pair<size_t, size_t>;

// Every pairwise order, depth first, keeping the first of the fewest
// flops (opt_einsum's cost: the product of the sizes of the letters
// involved, twice that when a letter is summed away). `inputs` are the
// operands' letters, `output` the result's; `size_of` a letter's size.
std::vector<Step> optimal(const std::vector<std::string> &inputs, const std::string &output,
                          const std::vector<std::pair<char, int64_t>> &sizes);

}  // namespace spmd::ops::einsum_path
