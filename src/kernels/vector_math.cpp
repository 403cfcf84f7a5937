#include "kernels/vector_math.hpp"

#include <cstdlib>
#include <cstring>

namespace spmd::vmath {

extern const Table kTableAvx512;
extern const Table kTableAvx2;
extern const Table kTableBaseline;

namespace {
const Table &choose() {
  const char *forced = std::getenv("SPMD_VECTOR_ISA");
  const bool any = forced == nullptr || *forced == '\0';
  __builtin_cpu_init();
  // AVX-512 tables need F and DQ (SLEEF's 16-lane functions use both).
  if ((any || std::strcmp(forced, "avx512") == 0) && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512dq"))
    return kTableAvx512;
  if ((any || std::strcmp(forced, "avx2") == 0 || std::strcmp(forced, "avx512") == 0) &&
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return kTableAvx2;
  return kTableBaseline;
}
}  // namespace

const Table &table() {
  static const Table &t = choose();
  return t;
}

}  // namespace spmd::vmath
