// The eight-lane random draws (kernels/random_simd.hpp) against the scalar
// ones of kernels/random.cpp, bit for bit: erfinv over every uniform the
// normals draw from and a sweep of the rest of (-1, 1); uniforms and
// normals of boxes whose rows are no multiple of 8 and whose counters
// cross a 2^32 boundary.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <numbers>
#include <vector>

#include "kernels/random.hpp"
#include "kernels/random_simd.hpp"

// Last: cmocka's macros (fail, ...) would clash with the C++ headers.
extern "C" {
#include <cmocka.h>
}

namespace {

using spmd::rng::Key;

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

bool same(float a, float b) { return bits_of(a) == bits_of(b) || (std::isnan(a) && std::isnan(b)); }

// Checks simd::erfinv_f32 against rng::erfinv_f32 on xs; the first
// difference is printed.
void check_erfinv(const std::vector<float> &xs) {
  std::vector<float> got(xs.size());
  spmd::rng::simd::erfinv_f32(xs.data(), static_cast<int64_t>(xs.size()), got.data());
  for (size_t i = 0; i < xs.size(); ++i) {
    const float want = spmd::rng::erfinv_f32(xs[i]);
    if (!same(got[i], want)) {
      std::printf("erfinv(%a): lanes %a, scalar %a\n", static_cast<double>(xs[i]), static_cast<double>(got[i]),
                  static_cast<double>(want));
      fail();
    }
  }
}

void erfinv_lanes_are_the_scalar_bits(void **) {
  if (!spmd::rng::simd::available()) skip();
  // Every uniform a normal draws: 2^23 of them, from nextafter(-1, 0) up.
  const float lo = std::nextafter(-1.0f, 0.0f), span = 1.0f - lo;
  std::vector<float> xs;
  xs.reserve(1u << 23);
  for (uint32_t m = 0; m < (1u << 23); ++m) {
    const float unit = from_bits(m | 0x3F800000u) - 1.0f;
    const float u = std::fma(unit, span, lo);
    xs.push_back(u > lo ? u : lo);
  }
  check_erfinv(xs);
  // A sweep of (-1, 1) of either sign, its ends, and what lies beyond.
  xs.clear();
  for (uint32_t b = 0; b < 0x3F800000u; b += 61) {
    xs.push_back(from_bits(b));
    xs.push_back(-from_bits(b));
  }
  for (float f : {1.0f, -1.0f, 0.0f, -0.0f, 1.5f, -3.0f, INFINITY, -INFINITY, NAN, 0x1p-126f, 0x1p-149f,
                  std::nextafter(1.0f, 0.0f), std::nextafter(-1.0f, 0.0f)})
    xs.push_back(f);
  while (xs.size() % 8) xs.push_back(0.5f);
  check_erfinv(xs);
}

// The scalar draws of one counter, as kernels/random.cpp makes them.
float scalar_uniform(Key key, uint64_t counter, float lo, float span) {
  const auto [b0, b1] = spmd::rng::threefry2x32(key, static_cast<uint32_t>(counter >> 32),
                                                static_cast<uint32_t>(counter));
  const float unit = from_bits(((b0 ^ b1) >> 9) | 0x3F800000u) - 1.0f;
  const float v = std::fma(unit, span, lo);
  return lo > v ? lo : v;
}

// Uniforms, normals and truncated normals of boxes of a (3, 2^31 + 5)
// array: rows of 13, 16, 3 and 64 elements whose counters cross 2^32 (the
// second row starts 2^31 + 5 on).
void draws_of_boxes_are_the_scalar_bits(void **) {
  if (!spmd::rng::simd::available()) skip();
  const Key key = spmd::rng::key_from_seed(42);
  const spmd::Shape global = {3, (int64_t{1} << 31) + 5};
  for (int64_t width : {13, 16, 3, 64}) {
    spmd::Box box;
    box.start = {0, global[1] - width + 1};
    box.stop = {3, global[1]};
    if (width == 64) box.start[1] = (int64_t{1} << 31) - 40;
    const int64_t row = box.stop[1] - box.start[1];
    using spmd::rng::Distribution;
    for (Distribution d : {Distribution::Uniform, Distribution::Normal, Distribution::TruncatedNormal}) {
      spmd::rng::Request r;
      r.distribution = d;
      r.key = key;
      r.dtype = SPMD_F32;
      r.minval = d == Distribution::Normal ? static_cast<double>(std::nextafter(-1.0f, 0.0f)) : -2.5;
      r.maxval = d == Distribution::TruncatedNormal ? 0.75 : 1.0;
      std::vector<float> got(static_cast<size_t>(3 * row));
      spmd::rng::generate_box(r, global, box, got.data());
      // The truncated normal's uniform spans erf of the bounds over sqrt 2,
      // and its draws are clipped just inside them.
      const float sqrt2 = std::numbers::sqrt2_v<float>;
      const float clip_lo = std::nextafter(static_cast<float>(r.minval), INFINITY);
      const float clip_hi = std::nextafter(static_cast<float>(r.maxval), -INFINITY);
      const float lo = d == Distribution::TruncatedNormal
                           ? spmd::rng::erf_f32(static_cast<float>(r.minval) * (1.0f / sqrt2))
                           : static_cast<float>(r.minval);
      const float span = (d == Distribution::TruncatedNormal
                              ? spmd::rng::erf_f32(static_cast<float>(r.maxval) * (1.0f / sqrt2))
                              : static_cast<float>(r.maxval)) -
                         lo;
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < row; ++j) {
          const uint64_t counter = static_cast<uint64_t>(i * global[1] + box.start[1] + j);
          float want = scalar_uniform(key, counter, lo, span);
          if (d != Distribution::Uniform) want = sqrt2 * spmd::rng::erfinv_f32(want);
          if (d == Distribution::TruncatedNormal) {
            want = clip_lo > want ? clip_lo : want;
            want = clip_hi < want ? clip_hi : want;
          }
          if (!same(got[static_cast<size_t>(i * row + j)], want)) {
            std::printf("width %lld, element (%lld, %lld): %a, scalar %a\n", static_cast<long long>(width),
                        static_cast<long long>(i), static_cast<long long>(j),
                        static_cast<double>(got[static_cast<size_t>(i * row + j)]), static_cast<double>(want));
            fail();
          }
        }
    }
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(erfinv_lanes_are_the_scalar_bits),
      cmocka_unit_test(draws_of_boxes_are_the_scalar_bits),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
