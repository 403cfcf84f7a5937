// Prints the op table (src/exec/ops/table.hpp): `--json` for the checks of
// check.py, `--markdown` for docs/ops.md.
#include <cstdio>
#include <cstring>
#include <string>

#include "exec/ops/table.hpp"

using namespace spmd::ops::table;

namespace {

std::string json_string(const char *s) {
  std::string out = "\"";
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\') out += '\\';
    out += *s;
  }
  return out + "\"";
}

const char *result_name(Result r) {
  switch (r) {
    case Result::Same: return "the operands' type";
    case Result::Float: return "a float";
    case Result::FloatOnly: return "a float (floats only)";
    case Result::Bool: return "bool";
  }
  return "?";
}

void json() {
  std::printf("{\n");
  const char *families[2] = {"unary", "binary"};
  for (int f = 0; f < 2; ++f) {
    std::printf("  \"%s\": [\n", families[f]);
    const auto rows = f == 0 ? unary() : binary();
    for (size_t i = 0; i < rows.size(); ++i)
      std::printf("    {\"c_name\": %s, \"c_value\": %d, \"name\": %s, \"jax\": %s, \"kernel\": %s}%s\n",
                  json_string(rows[i].c_name).c_str(), rows[i].c_value,
                  json_string(rows[i].name).c_str(), json_string(rows[i].jax).c_str(),
                  json_string(spmd::ew::op_name(rows[i].kernel)).c_str(),
                  i + 1 < rows.size() ? "," : "");
    std::printf("  ],\n");
  }
  std::printf("  \"reduce\": [\n");
  const auto red = reductions();
  for (size_t i = 0; i < red.size(); ++i)
    std::printf("    {\"c_name\": %s, \"c_value\": %d, \"name\": %s, \"jax\": %s}%s\n",
                json_string(red[i].c_name).c_str(), red[i].c_value, json_string(red[i].name).c_str(),
                json_string(red[i].jax).c_str(), i + 1 < red.size() ? "," : "");
  std::printf("  ],\n  \"functions\": [\n");
  const auto fns = functions();
  for (size_t i = 0; i < fns.size(); ++i)
    std::printf("    {\"c_name\": %s, \"name\": %s, \"jax\": %s, \"arity\": %d}%s\n",
                json_string(fns[i].c_name).c_str(), json_string(fns[i].name).c_str(),
                json_string(fns[i].jax).c_str(), fns[i].arity, i + 1 < fns.size() ? "," : "");
  std::printf("  ]\n}\n");
}

void markdown() {
  std::printf(
      "# The op table\n\n"
      "Every global op of `spmd/ops.h`, one row each, as `src/exec/ops/table.cpp` holds\n"
      "them. This page is printed from that table (`build/tests/spmd-op-table --markdown`)\n"
      "and the test `op_table` fails when it is stale, when `ops.h` has an op the table\n"
      "lacks (or the other way round), or when the Go, Rust or Julia op lists differ from\n"
      "it. Rules are written in Shardy's manner: a letter is one factor of a dimension,\n"
      "operands that share a letter are split alike, and a factor the result lacks is\n"
      "reduced (split, it leaves partial results that a collective combines).\n"
      "`docs/compute.md` explains each rule and its JAX examples.\n\n"
      "Adding an op: its line in `ops.h`, its row in `table.cpp`, its kernel, and its line\n"
      "in each binding's op list.\n\n");
  std::printf("## Entry points\n\n| C function | JAX | operands | rule | kernel |\n|---|---|---|---|---|\n");
  for (const Function &f : functions()) {
    const std::string arity = f.arity == 0 ? "any number" : std::to_string(f.arity);
    // A JAX column in parentheses is prose, not a JAX name.
    const char *quote = f.jax[0] == '(' ? "" : "`";
    std::printf("| `%s` | %s%s%s | %s | `%s` | %s |\n", f.c_name, quote, f.jax, quote, arity.c_str(),
                f.rule, f.kernel);
  }
  const char *titles[2] = {"Functions of one array (`spmd_unary_op`)",
                           "Functions of two operands (`spmd_binary_op`)"};
  for (int t = 0; t < 2; ++t) {
    std::printf("\n## %s\n\n| enumerator | value | JAX | result | kernel |\n|---|---|---|---|---|\n",
                titles[t]);
    for (const Elementwise &e : t == 0 ? unary() : binary())
      std::printf("| `%s` | %d | `%s` | %s | `%s` |\n", e.c_name, e.c_value, e.jax,
                  result_name(e.result), spmd::ew::op_name(e.kernel));
  }
  std::printf("\n## Reductions (`spmd_reduce_op`)\n\n| enumerator | value | JAX | over split axes |\n"
              "|---|---|---|---|\n");
  for (const Reduction &r : reductions())
    std::printf("| `%s` | %d | `%s` | %s |\n", r.c_name, r.c_value, r.jax, r.collective);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 2 && std::strcmp(argv[1], "--json") == 0) {
    json();
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--markdown") == 0) {
    markdown();
    return 0;
  }
  std::fprintf(stderr, "usage: %s --json | --markdown\n", argv[0]);
  return 2;
}
