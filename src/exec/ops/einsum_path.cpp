#include "exec/ops/einsum_path.hpp"

#include <tuple>

namespace spmd::ops::einsum_path {

namespace {

using Letters = uint64_t;  // one bit per letter: a-z, then A-Z
// opt_einsum counts in Python's unbounded ints; 128 bits hold any product of
// two operands' sizes.
__extension__ typedef unsigned __int128 Flops;

int bit_of(char c) { return c >= 'a' && c <= 'z' ? c - 'a' : 26 + (c - 'A'); }

Letters letters_of(const std::string &s) {
  Letters l = 0;
  for (char c : s) l |= Letters{1} << bit_of(c);
  return l;
}

struct Search {
  std::vector<Letters> inputs;  // by id; results appended
  // opt_einsum caches a pair's result letters and cost by the pair's
  // letters alone, though both depend on which operands remain: a pair met
  // again later in the search reuses what it cost when first met. Kept, so
  // that the search ranks paths as jnp.einsum's does (it executes the path
  // found with the right letters, as libspmd does).
  std::vector<std::tuple<Letters, Letters, Letters, Flops>> cache;
  Letters output = 0;
  int64_t size[52] = {};
  Flops best = ~Flops{0};  // (numeric_limits knows __int128 only in GNU modes)
  std::vector<Step> best_path, path;

  Flops size_of(Letters l) const {
    Flops n = 1;
    for (int b = 0; b < 52; ++b)
      if (l >> b & 1) n *= static_cast<Flops>(size[b]);
    return n;
  }

  // The letters of contracting operands i and j and its cost (opt_einsum's
  // calc_k12_flops, through the cache).
  std::pair<Letters, Flops> pair(const std::vector<size_t> &remaining, size_t i, size_t j) {
    for (const auto &[a, b, k12, cost] : cache)
      if (a == inputs[i] && b == inputs[j]) return {k12, cost};
    Letters keep = output;
    for (size_t k : remaining)
      if (k != i && k != j) keep |= inputs[k];
    const Letters either = inputs[i] | inputs[j], shared = inputs[i] & inputs[j];
    const Flops cost = size_of(either) * ((shared & ~keep) ? 2 : 1);
    cache.emplace_back(inputs[i], inputs[j], either & keep, cost);
    return {either & keep, cost};
  }

  // `remaining` ascending, as Python iterates a small set of small ints.
  void iterate(const std::vector<size_t> &remaining, Flops flops) {
    if (remaining.size() == 1) {
      best = flops;
      best_path = path;
      return;
    }
    for (size_t a = 0; a < remaining.size(); ++a)
      for (size_t b = a + 1; b < remaining.size(); ++b) {
        const size_t i = remaining[a], j = remaining[b];
        const auto [k12, cost] = pair(remaining, i, j);
        const Flops total = flops + cost;
        if (total >= best) continue;
        std::vector<size_t> next;
        for (size_t k : remaining)
          if (k != i && k != j) next.push_back(k);
        next.push_back(inputs.size());
        inputs.push_back(k12);
        path.push_back({i, j});
        iterate(next, total);
        path.pop_back();
        inputs.pop_back();
      }
  }
};

}  // namespace

std::vector<Step> optimal(const std::vector<std::string> &inputs, const std::string &output,
                          const std::vector<std::pair<char, int64_t>> &sizes) {
  Search s;
  for (const auto &in : inputs) s.inputs.push_back(letters_of(in));
  s.output = letters_of(output);
  for (const auto &[c, n] : sizes) s.size[bit_of(c)] = n;
  std::vector<size_t> all(inputs.size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = k;
  s.iterate(all, 0);
  return s.best_path;
}

}  // namespace spmd::ops::einsum_path
