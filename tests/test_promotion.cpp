// JAX's dtype promotion (base/promotion.hpp) held to tables JAX printed:
// every pair of the twelve dtypes through jnp.promote_types, the float type
// of transcendental functions, the type sums return, and the Python scalars
// an integer array takes. The tables were made with JAX 0.10.2:
//
//   jax.config.update('jax_enable_x64', True)
//   names = ['float32', 'float64', 'float16', 'bfloat16', 'int32', 'int64',
//            'uint8', 'bool', 'int8', 'int16', 'uint16', 'uint32']  # enum order
//   [[jnp.promote_types(a, b) for b in names] for a in names]
//   [jnp.sin(jnp.ones(2, a)).dtype for a in names]
//
// and, with x64 off (libspmd keeps int32 sums in int32, as JAX does there;
// under x64 JAX widens every integer sum to 64 bits),
//
//   [jnp.sum(jnp.ones(2, a)).dtype for a in names]
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmath>
#include <cstring>
#include <string>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "base/promotion.hpp"

// Last: cmocka's macros (fail, ...) would clash with the C++ headers.
extern "C" {
#include <cmocka.h>
}

namespace {

constexpr spmd_dtype F32 = SPMD_F32, F64 = SPMD_F64, F16 = SPMD_F16, BF16 = SPMD_BF16,
                     I32 = SPMD_I32, I64 = SPMD_I64, U8 = SPMD_U8, BOOL = SPMD_BOOL,
                     I8 = SPMD_I8, I16 = SPMD_I16, U16 = SPMD_U16, U32 = SPMD_U32;

constexpr int kCount = 12;
constexpr spmd_dtype kTypes[kCount] = {F32, F64, F16, BF16, I32, I64, U8, BOOL, I8, I16, U16, U32};

// jnp.promote_types(row, column), jax_enable_x64 on.
constexpr spmd_dtype kPromoted[kCount][kCount] = {
    {F32, F64, F32, F32, F32, F32, F32, F32, F32, F32, F32, F32},                  // float32
    {F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64},                  // float64
    {F32, F64, F16, F32, F16, F16, F16, F16, F16, F16, F16, F16},                  // float16
    {F32, F64, F32, BF16, BF16, BF16, BF16, BF16, BF16, BF16, BF16, BF16},         // bfloat16
    {F32, F64, F16, BF16, I32, I64, I32, I32, I32, I32, I32, I64},                 // int32
    {F32, F64, F16, BF16, I64, I64, I64, I64, I64, I64, I64, I64},                 // int64
    {F32, F64, F16, BF16, I32, I64, U8, U8, I16, I16, U16, U32},                   // uint8
    {F32, F64, F16, BF16, I32, I64, U8, BOOL, I8, I16, U16, U32},                  // bool
    {F32, F64, F16, BF16, I32, I64, I16, I8, I8, I16, I32, I64},                   // int8
    {F32, F64, F16, BF16, I32, I64, I16, I16, I16, I16, I32, I64},                 // int16
    {F32, F64, F16, BF16, I32, I64, U16, U16, I32, I32, U16, U32},                 // uint16
    {F32, F64, F16, BF16, I64, I64, U32, U32, I64, I64, U32, U32},                 // uint32
};

// jnp.sin's dtype, x64 on.
constexpr spmd_dtype kFloatResult[kCount] = {F32, F64, F16, BF16, F32, F64, F32, F32, F32, F32, F32, F32};

// jnp.sum's dtype, x64 off, but for the 64-bit types, which keep their own.
constexpr spmd_dtype kSum[kCount] = {F32, F64, F16, BF16, I32, I64, U32, I32, I32, I32, U32, U32};

std::string name(spmd_dtype d) { return spmd::dtype_name(d); }

void every_pair_promotes_as_jnp_promote_types(void **) {
  int wrong = 0;
  for (int a = 0; a < kCount; ++a)
    for (int b = 0; b < kCount; ++b) {
      const spmd_dtype got = spmd::promote_types(kTypes[a], kTypes[b]);
      if (got != kPromoted[a][b]) {
        print_error("promote_types(%s, %s) = %s, JAX: %s\n", name(kTypes[a]).c_str(),
                    name(kTypes[b]).c_str(), name(got).c_str(), name(kPromoted[a][b]).c_str());
        ++wrong;
      }
    }
  assert_int_equal(wrong, 0);
}

// What makes it a lattice: the join is symmetric, and promoting with the
// join changes nothing (associativity over every triple).
void promotion_is_a_join(void **) {
  for (spmd_dtype a : kTypes)
    for (spmd_dtype b : kTypes) {
      assert_int_equal(spmd::promote_types(a, b), spmd::promote_types(b, a));
      for (spmd_dtype c : kTypes)
        assert_int_equal(spmd::promote_types(spmd::promote_types(a, b), c),
                         spmd::promote_types(a, spmd::promote_types(b, c)));
    }
}

void transcendental_results_and_sums_take_jax_types(void **) {
  for (int i = 0; i < kCount; ++i) {
    assert_int_equal(spmd::float_result(kTypes[i]), kFloatResult[i]);
    assert_int_equal(spmd::sum_result(kTypes[i]), kSum[i]);
  }
}

void integer_kinds_are_named(void **) {
  for (spmd_dtype d : {I8, I16, I32, I64, U8, U16, U32}) assert_true(spmd::dtype_is_integer(d));
  for (spmd_dtype d : {F32, F64, F16, BF16, BOOL}) assert_false(spmd::dtype_is_integer(d));
  const struct { spmd_dtype d; const char *name; size_t size; } rows[] = {
      {I8, "int8", 1}, {I16, "int16", 2}, {U16, "uint16", 2}, {U32, "uint32", 4}};
  for (const auto &r : rows) {
    assert_string_equal(spmd::dtype_name(r.d), r.name);
    assert_int_equal(spmd::dtype_size(r.d), r.size);
  }
}

// A Python integer beside an integer array keeps the array's type (wrapped
// into it when it does not fit, as JAX converts it); a fractional one goes
// to the float type; bool + 1 is int32.
void scalars_keep_the_array_type(void **) {
  const struct { spmd_dtype array; double scalar; spmd_dtype want; } rows[] = {
      {I8, 127, I8},        {I8, -128, I8},           {I8, 1.5, F32},
      {I16, -32768, I16},   {I16, 32767, I16},        {U16, 65535, U16},
      {U16, 0, U16},        {U32, 2147483647.0, U32}, {U32, 0.5, F32},
      {U8, 255, U8},        {BOOL, 1, I32},           {BOOL, 0.5, F32},
      {I64, -9223372036854775808.0, I64}, {I8, 300, I8}, {U16, -1, U16},
  };
  for (const auto &r : rows) assert_int_equal(spmd::scalar_promotion(r.array, r.scalar, "s"), r.want);
}

// The scalars an integer array cannot hold are refused, naming the scalar
// and the type (JAX would wrap int8 + 300 to 45: docs/differences.md).
// JAX converts an integral scalar to the array's type, wrapping, and
// raises OverflowError only outside int32 (int64 beside int64): uint32 with
// 2^31 is refused though it fits, as JAX refuses it.
void scalars_out_of_range_are_refused_by_name(void **) {
  const struct { spmd_dtype array; double scalar; const char *type; } rows[] = {
      {I8, 2147483648.0, "int32"}, {I8, -2147483649.0, "int32"}, {U32, 2147483648.0, "int32"},
      {U32, 4294967295.0, "int32"}, {U8, -2147483649.0, "int32"}, {I32, 2147483648.0, "int32"},
      {BOOL, 2147483648.0, "int32"}, {I64, 9223372036854775808.0, "int64"},
  };
  for (const spmd_dtype d : {I8, I16, U8, U16, U32, I32})
    for (const double s : {300.0, -129.0, 65536.0, -1.0, 2147483647.0, -2147483648.0})
      assert_int_equal(spmd::scalar_promotion(d, s, "scalar"), d);
  for (const auto &r : rows) {
    try {
      spmd::scalar_promotion(r.array, r.scalar, "scalar");
      fail_msg("%s with %g: not refused", spmd::dtype_name(r.array), r.scalar);
    } catch (const spmd::Error &e) {
      assert_int_equal(e.status(), SPMD_ERR_INVALID_ARGUMENT);
      const std::string what = e.what();
      assert_true(what.rfind("scalar: ", 0) == 0);
      assert_true(what.find(std::string("is outside ") + r.type) != std::string::npos);
    }
  }
}

// jnp.astype's conversions of a value to each new type, as JAX gives them:
// floats truncated and saturated (NaN is 0), read back exactly.
void values_convert_as_jnp_astype(void **) {
  const struct { spmd_dtype d; double in, want; } rows[] = {
      {I8, 300.7, 127},     {I8, -300.7, -128},     {I8, -1.9, -1},    {I8, NAN, 0},
      {I16, 1e10, 32767},   {I16, -1e10, -32768},   {U16, -1, 0},      {U16, 65535.9, 65535},
      {U32, -1, 0},         {U32, 5e9, 4294967295.0}, {U32, 70000, 70000}, {U32, INFINITY, 4294967295.0},
      {U32, -INFINITY, 0},  {I8, INFINITY, 127},
  };
  for (const auto &r : rows) {
    unsigned char buf[8] = {};
    spmd::store_from_double(r.d, r.in, buf);
    const double got = spmd::load_as_double(r.d, buf);
    if (got != r.want) fail_msg("%g as %s: %g, JAX: %g", r.in, spmd::dtype_name(r.d), got, r.want);
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_pair_promotes_as_jnp_promote_types),
      cmocka_unit_test(promotion_is_a_join),
      cmocka_unit_test(transcendental_results_and_sums_take_jax_types),
      cmocka_unit_test(integer_kinds_are_named),
      cmocka_unit_test(scalars_keep_the_array_type),
      cmocka_unit_test(scalars_out_of_range_are_refused_by_name),
      cmocka_unit_test(values_convert_as_jnp_astype),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
