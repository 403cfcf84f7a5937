// jnp.einsum's order of contractions: einsum_path::optimal gives the path
// opt_einsum's "optimal" search gives (ties broken as it breaks them) on
// equations drawn at random, many with letters of size 1, where ties are
// common. The expected paths are opt_einsum 3.4's, in its linear form,
// made by:
//   rng = random.Random(7); for 24 draws: 3 or 4 terms of 1-3 of "abcde",
//   an output of each letter with probability 0.3, sizes from
//   {1, 2, 3, 5, 8, 13, 64, 100}; paths.optimal(inputs, output, sizes, None)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "exec/ops/einsum_path.hpp"

// Last: cmocka's macros (fail, ...) would clash with the C++ headers.
extern "C" {
#include <cmocka.h>
}

namespace {

using spmd::ops::einsum_path::Step;

struct Case {
  std::vector<std::string> inputs;
  std::string output;
  std::vector<std::pair<char, int64_t>> sizes;
  std::vector<std::pair<size_t, size_t>> linear;
};

const Case kCases[] = {
    {{"d", "aec", "c", "abe"}, "ace", {{'a', 2}, {'b', 5}, {'c', 1}, {'d', 64}, {'e', 1}}, {{0, 2}, {0, 1}, {0, 1}}},
    {{"e", "c", "ba"}, "e", {{'a', 5}, {'b', 13}, {'c', 2}, {'e', 2}}, {{1, 2}, {0, 1}}},
    {{"bdc", "dcb", "dcb"}, "bc", {{'b', 2}, {'c', 8}, {'d', 100}}, {{0, 1}, {0, 1}}},
    {{"dce", "a", "dbe", "d"}, "c", {{'a', 13}, {'b', 13}, {'c', 13}, {'d', 100}, {'e', 100}}, {{2, 3}, {0, 2}, {0, 1}}},
    {{"c", "ae", "cdb"}, "", {{'a', 2}, {'b', 100}, {'c', 1}, {'d', 5}, {'e', 8}}, {{0, 1}, {0, 1}}},
    {{"bde", "ab", "dc"}, "d", {{'a', 13}, {'b', 64}, {'c', 5}, {'d', 3}, {'e', 2}}, {{0, 2}, {0, 1}}},
    {{"b", "bae", "bce"}, "a", {{'a', 3}, {'b', 1}, {'c', 100}, {'e', 64}}, {{0, 2}, {0, 1}}},
    {{"da", "da", "a", "d"}, "a", {{'a', 1}, {'d', 2}}, {{0, 1}, {0, 1}, {0, 1}}},
    {{"bae", "aed", "dbc"}, "ad", {{'a', 100}, {'b', 100}, {'c', 100}, {'d', 8}, {'e', 2}}, {{0, 1}, {0, 1}}},
    {{"c", "cde", "e"}, "c", {{'c', 3}, {'d', 1}, {'e', 8}}, {{1, 2}, {0, 1}}},
    {{"cea", "bc", "bea"}, "c", {{'a', 13}, {'b', 1}, {'c', 1}, {'e', 8}}, {{0, 2}, {0, 1}}},
    {{"bc", "ce", "b", "b"}, "", {{'b', 1}, {'c', 100}, {'e', 13}}, {{1, 2}, {0, 2}, {0, 1}}},
    {{"adc", "d", "d"}, "", {{'a', 64}, {'c', 100}, {'d', 64}}, {{0, 1}, {0, 1}}},
    {{"bea", "b", "dbc"}, "", {{'a', 3}, {'b', 1}, {'c', 1}, {'d', 2}, {'e', 3}}, {{1, 2}, {0, 1}}},
    {{"b", "c", "c", "bce"}, "e", {{'b', 13}, {'c', 100}, {'e', 64}}, {{1, 2}, {0, 2}, {0, 1}}},
    {{"bae", "e", "b"}, "a", {{'a', 1}, {'b', 13}, {'e', 100}}, {{0, 1}, {0, 1}}},
    {{"abe", "ae", "dae"}, "", {{'a', 8}, {'b', 100}, {'d', 100}, {'e', 5}}, {{1, 2}, {0, 1}}},
    {{"bda", "ad", "ca", "bda"}, "ac", {{'a', 13}, {'b', 3}, {'c', 8}, {'d', 3}}, {{0, 3}, {0, 2}, {0, 1}}},
    {{"a", "db", "bec", "ed"}, "be", {{'a', 100}, {'b', 100}, {'c', 1}, {'d', 64}, {'e', 13}}, {{0, 3}, {0, 2}, {0, 1}}},
    {{"aed", "a", "ca", "c"}, "", {{'a', 8}, {'c', 64}, {'d', 3}, {'e', 100}}, {{0, 1}, {0, 1}, {0, 1}}},
    {{"c", "b", "ac", "a"}, "b", {{'a', 2}, {'b', 8}, {'c', 2}}, {{0, 2}, {1, 2}, {0, 1}}},
    {{"c", "dce", "a", "bad"}, "ab", {{'a', 5}, {'b', 8}, {'c', 100}, {'d', 3}, {'e', 8}}, {{0, 1}, {0, 2}, {0, 1}}},
    {{"c", "a", "e", "bda"}, "b", {{'a', 64}, {'b', 8}, {'c', 5}, {'d', 5}, {'e', 13}}, {{0, 2}, {1, 2}, {0, 1}}},
    {{"bde", "b", "a"}, "e", {{'a', 64}, {'b', 8}, {'d', 5}, {'e', 8}}, {{0, 1}, {0, 1}}},

};

// opt_einsum's ssa_to_linear: each step's ids as positions in the list of
// operands still there (results appended).
std::vector<std::pair<size_t, size_t>> linear(const std::vector<Step> &ssa, size_t n) {
  std::vector<size_t> ids(n);
  for (size_t k = 0; k < n; ++k) ids[k] = k;
  std::vector<std::pair<size_t, size_t>> path;
  size_t next = n;
  for (const Step &s : ssa) {
    size_t a = static_cast<size_t>(std::find(ids.begin(), ids.end(), s.first) - ids.begin());
    size_t b = static_cast<size_t>(std::find(ids.begin(), ids.end(), s.second) - ids.begin());
    if (a > b) std::swap(a, b);
    path.push_back({a, b});
    ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(b));
    ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(a));
    ids.push_back(next++);
  }
  return path;
}

void paths_are_opt_einsums(void **) {
  int wrong = 0;
  for (const Case &c : kCases) {
    const auto got = linear(spmd::ops::einsum_path::optimal(c.inputs, c.output, c.sizes), c.inputs.size());
    if (got == c.linear) continue;
    ++wrong;
    std::string text;
    for (const auto &t : c.inputs) text += t + ",";
    std::fprintf(stderr, "%s->%s: got", text.c_str(), c.output.c_str());
    for (const auto &[a, b] : got) std::fprintf(stderr, " (%zu, %zu)", a, b);
    std::fprintf(stderr, ", opt_einsum");
    for (const auto &[a, b] : c.linear) std::fprintf(stderr, " (%zu, %zu)", a, b);
    std::fprintf(stderr, "\n");
  }
  assert_int_equal(wrong, 0);
}

// Three operands where one order is far cheaper: (ij jk) first makes a
// small ik (2 million multiply-adds, doubled as j is summed), then ik kl
// the same; jk kl first would leave ij jl, a billion.
void the_cheapest_order_wins(void **) {
  const auto path = spmd::ops::einsum_path::optimal({"ij", "jk", "kl"}, "il",
                                                     {{'i', 1000}, {'j', 1000}, {'k', 2}, {'l', 1000}});
  assert_int_equal(path.size(), 2);
  assert_int_equal(path[0].first, 0);
  assert_int_equal(path[0].second, 1);
  assert_int_equal(path[1].first, 2);
  assert_int_equal(path[1].second, 3);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(paths_are_opt_einsums),
      cmocka_unit_test(the_cheapest_order_wins),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
