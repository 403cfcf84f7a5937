// The float32 sine and cosine of the vector table this CPU uses
// (kernels/vector_math.hpp; on AVX2 and AVX-512, kernels/trig_lanes.hpp)
// against the double-precision functions: within 1 ulp over a sweep of
// every magnitude, the special values as IEEE and JAX give them, and each
// element's result independent of its neighbours.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/flush_subnormals.hpp"
#include "kernels/vector_math.hpp"

// Last: cmocka's macros (fail, ...) would clash with the C++ headers.
extern "C" {
#include <cmocka.h>
}

namespace {

using spmd::vmath::Fn;

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// |got - want| in units of the last place of want rounded to float.
double ulps(float got, double want) {
  const float w = std::fabs(static_cast<float>(want));
  const double unit = static_cast<double>(std::nextafter(w, std::numeric_limits<float>::infinity())) - w;
  return std::fabs(static_cast<double>(got) - want) / unit;
}

// Every `step`-th float bit pattern from `lo` below `hi`, each also negated.
std::vector<float> sweep(uint32_t lo, uint32_t hi, uint32_t step) {
  std::vector<float> xs;
  for (uint64_t b = lo; b < hi; b += step) {
    xs.push_back(from_bits(static_cast<uint32_t>(b)));
    xs.push_back(-from_bits(static_cast<uint32_t>(b)));
  }
  return xs;
}

// The largest distance in ulps of fn's values over xs from the double
// function's; the worst argument is printed.
double worst_ulps(Fn fn, const std::vector<float> &xs) {
  std::vector<float> got(xs.size());
  spmd::vmath::f32(fn)(xs.data(), got.data(), xs.size());
  double worst = 0;
  float at = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i];
    const double e = ulps(got[i], fn == Fn::Sin ? std::sin(x) : std::cos(x));
    if (e > worst) worst = e, at = xs[i];
  }
  std::printf("  %s (%s): %zu arguments, at most %.3f ulp (at %.9g)\n", fn == Fn::Sin ? "sin" : "cos",
              spmd::vmath::table().isa, xs.size(), worst, static_cast<double>(at));
  return worst;
}

// 2^-12 up to 2^17 (where kernels/trig_lanes.hpp reduces the argument
// itself), every 257th float of each sign; then up to the largest float,
// where SLEEF's functions take over.
void within_one_ulp(void **) {
  const auto near = sweep(bits_of(0x1p-12f), bits_of(0x1p17f), 257);
  const auto far = sweep(bits_of(0x1p17f), bits_of(std::numeric_limits<float>::max()), 4099);
  for (Fn fn : {Fn::Sin, Fn::Cos}) {
    assert_true(worst_ulps(fn, near) <= 1.0);
    assert_true(worst_ulps(fn, far) <= 1.0);
  }
  // Each side of pi/4, where the reduction passes from one quadrant to
  // the next, and of 2^17, every float.
  for (float mid : {0.78539816f, 2.35619449f, 0x1p17f}) {
    const auto edge = sweep(bits_of(mid) - 4096, bits_of(mid) + 4096, 1);
    for (Fn fn : {Fn::Sin, Fn::Cos}) assert_true(worst_ulps(fn, edge) <= 1.0);
  }
}

// Multiples of pi/2 as floats: the reduced argument is tiny there and
// must keep its relative accuracy.
void near_multiples_of_half_pi(void **) {
  std::vector<float> xs;
  for (int k = 1; k < 80000; k += 7) {
    const float x = static_cast<float>(k * 1.5707963267948966);
    for (int d = -2; d <= 2; ++d) xs.push_back(from_bits(bits_of(x) + static_cast<uint32_t>(d)));
  }
  for (Fn fn : {Fn::Sin, Fn::Cos}) assert_true(worst_ulps(fn, xs) <= 1.0);
}

void special_values(void **) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float sub = from_bits(0x00000123u);
  const float xs[10] = {0.0f, -0.0f, inf, -inf, nan, sub, -sub, 0x1p-20f, -0x1p-20f, 3.0e38f};
  float s[10], c[10];
  spmd::vmath::f32(Fn::Sin)(xs, s, 10);
  spmd::vmath::f32(Fn::Cos)(xs, c, 10);
  assert_int_equal(bits_of(s[0]), bits_of(0.0f));
  assert_int_equal(bits_of(s[1]), bits_of(-0.0f));
  assert_true(c[0] == 1.0f && c[1] == 1.0f);
  for (int i = 2; i < 5; ++i) assert_true(std::isnan(s[i]) && std::isnan(c[i]));
  // Subnormals: sin x is x, cos x is 1...
  assert_int_equal(bits_of(s[5]), bits_of(sub));
  assert_int_equal(bits_of(s[6]), bits_of(-sub));
  assert_true(c[5] == 1.0f);
  assert_int_equal(bits_of(s[7]), bits_of(0x1p-20f));  // sin x rounds to x
  assert_int_equal(bits_of(s[8]), bits_of(-0x1p-20f));
  assert_true(ulps(s[9], std::sin(static_cast<double>(xs[9]))) <= 1.0);
  // ... even where the arithmetic flushes them, as the library's kernels
  // (and XLA's) run: jax.jit(jnp.sin) returns a subnormal x as it is.
  {
    spmd::FlushSubnormals ftz;
    spmd::vmath::f32(Fn::Sin)(xs, s, 10);
  }
  assert_int_equal(bits_of(s[5]), bits_of(sub));
  assert_int_equal(bits_of(s[6]), bits_of(-sub));
  assert_int_equal(bits_of(s[1]), bits_of(-0.0f));
}

// An element's value does not depend on the others in its vector (where a
// neighbour is beyond the reduction's range, only that lane takes the
// other path), nor on where in the array it stands.
void independent_of_neighbours(void **) {
  const float xs[7] = {0.5f, -2.0f, 100.25f, 7.0e4f, 1.0e-3f, 3.14159274f, -1.0e5f};
  for (Fn fn : {Fn::Sin, Fn::Cos}) {
    for (float x : xs) {
      float alone[1], got[1];
      spmd::vmath::f32(fn)(&x, alone, 1);
      for (size_t at = 0; at < 16; ++at) {
        float row[16], out[16];
        for (size_t k = 0; k < 16; ++k) row[k] = (k % 3 == 0) ? 1.0e30f : std::numeric_limits<float>::infinity();
        row[at] = x;
        spmd::vmath::f32(fn)(row, out, 16);
        got[0] = out[at];
        assert_int_equal(bits_of(got[0]), bits_of(alone[0]));
      }
    }
  }
}

}  // namespace

namespace spmd::vmath {
extern const Table kTableAvx512;
extern const Table kTableAvx2;
}  // namespace spmd::vmath

namespace {

// Sixteen lanes give the bits of eight (kernels/trig_lanes.hpp is one
// algorithm in either width): every AVX-512 machine's sine and cosine are an
// AVX2 machine's. Where this CPU has no AVX-512, there is nothing to compare.
void same_bits_in_either_width(void **) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq")) {
    std::printf("  no AVX-512 on this CPU: nothing to compare\n");
    return;
  }
  auto xs = sweep(0, bits_of(std::numeric_limits<float>::infinity()) + 1, 613);
  xs.push_back(std::numeric_limits<float>::quiet_NaN());
  for (int fn = 0; fn < 2; ++fn) {
    const int k = static_cast<int>(fn == 0 ? Fn::Sin : Fn::Cos);
    std::vector<float> narrow(xs.size()), wide(xs.size());
    spmd::vmath::kTableAvx2.f32[k](xs.data(), narrow.data(), xs.size());
    spmd::vmath::kTableAvx512.f32[k](xs.data(), wide.data(), xs.size());
    for (size_t i = 0; i < xs.size(); ++i)
      if (bits_of(narrow[i]) != bits_of(wide[i])) {
        std::printf("  %s(%a): AVX2 %a, AVX-512 %a\n", fn == 0 ? "sin" : "cos", static_cast<double>(xs[i]),
                    static_cast<double>(narrow[i]), static_cast<double>(wide[i]));
        fail();
      }
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(within_one_ulp),
      cmocka_unit_test(near_multiples_of_half_pi),
      cmocka_unit_test(special_values),
      cmocka_unit_test(independent_of_neighbours),
      cmocka_unit_test(same_bits_in_either_width),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
