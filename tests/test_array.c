/* Sharded arrays: device_put and back, generators, shards, single-device
 * arrays, and bad input. */
#include "spmd_test.h"

#include <stdlib.h>

static spmd_runtime *rt;
static spmd_mesh *mesh24;

static int setup(void **state) {
  (void)state;
  rt = test_runtime(8);
  int64_t shape[2] = {2, 4};
  mesh24 = test_mesh(rt, 2, shape);
  return 0;
}
static int teardown(void **state) {
  (void)state;
  spmd_mesh_destroy(mesh24);
  spmd_runtime_destroy(rt);
  return 0;
}

static void round_trip_every_dtype(void **state) {
  (void)state;
  const spmd_dtype dtypes[] = {SPMD_F32, SPMD_F64, SPMD_F16, SPMD_BF16, SPMD_I32, SPMD_I64,
                               SPMD_U8,  SPMD_BOOL, SPMD_I8,  SPMD_I16,  SPMD_U16, SPMD_U32};
  const char *specs[] = {"x, y", "y", "None, (x, y)", "", "(y, x)"};
  int64_t shape[2] = {6, 10}; /* uneven over 4 and 8 */
  for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; ++d)
    for (size_t k = 0; k < sizeof specs / sizeof *specs; ++k) {
      const size_t es = spmd_dtype_size(dtypes[d]);
      const size_t nbytes = 60 * es;
      unsigned char *in = malloc(nbytes), *out = malloc(nbytes);
      for (size_t i = 0; i < nbytes; ++i) in[i] = (unsigned char)(i * 37 + d);
      if (dtypes[d] == SPMD_BOOL)
        for (size_t i = 0; i < nbytes; ++i) in[i] &= 1;
      spmd_sharding *s = test_sharding(mesh24, specs[k]);
      spmd_array *a;
      assert_ok(spmd_array_from_host(s, dtypes[d], 2, shape, in, nbytes, &a));
      memset(out, 0xAB, nbytes);
      assert_ok(spmd_array_to_host(a, out, nbytes));
      assert_memory_equal(in, out, nbytes);
      spmd_dtype got;
      assert_ok(spmd_array_dtype(a, &got));
      assert_int_equal(got, dtypes[d]);
      size_t total;
      assert_ok(spmd_array_nbytes(a, &total));
      assert_int_equal(total, nbytes);
      spmd_array_destroy(a);
      spmd_sharding_destroy(s);
      free(in);
      free(out);
    }
}

static void shards_hold_their_blocks(void **state) {
  (void)state;
  spmd_sharding *s = test_sharding(mesh24, "x, y");
  int64_t shape[2] = {4, 8};
  spmd_array *a;
  assert_ok(spmd_array_arange(s, SPMD_F32, 2, shape, 0.0, 1.0, &a));
  size_t n;
  assert_ok(spmd_array_shard_count(a, &n));
  assert_int_equal(n, 8);
  for (size_t i = 0; i < n; ++i) {
    spmd_shard_info info = {sizeof info, 0, 0, 0, {0}, {0}, {0}};
    assert_ok(spmd_array_shard_info(a, i, &info));
    assert_int_equal(info.local_shape[0], 2);
    assert_int_equal(info.local_shape[1], 2);
    float block[4];
    assert_ok(spmd_array_shard_read(a, i, block, sizeof block));
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 2; ++c)
        assert_float_equal(block[r * 2 + c], (float)((info.start[0] + r) * 8 + info.start[1] + c),
                           0.0);
  }
  /* Writing one shard changes that block only. */
  float fives[4] = {5, 5, 5, 5};
  assert_ok(spmd_array_shard_write(a, 3, fives, sizeof fives));
  float host[32];
  assert_ok(spmd_array_to_host(a, host, sizeof host));
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 8; ++c) {
      const int in_shard3 = r < 2 && c >= 6;
      assert_float_equal(host[r * 8 + c], in_shard3 ? 5.0f : (float)(r * 8 + c), 0.0);
    }
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
}

static void generators_fill_every_dtype(void **state) {
  (void)state;
  spmd_sharding *s = test_sharding(mesh24, "(x, y)");
  int64_t shape[1] = {12};
  spmd_array *a;
  assert_ok(spmd_array_full(s, SPMD_I64, 1, shape, -7.9, &a));
  int64_t i64[12];
  assert_ok(spmd_array_to_host(a, i64, sizeof i64));
  for (int i = 0; i < 12; ++i) assert_int_equal(i64[i], -7); /* truncates toward zero */
  spmd_array_destroy(a);

  assert_ok(spmd_array_full(s, SPMD_BF16, 1, shape, 1.5, &a));
  uint16_t bits[12];
  assert_ok(spmd_array_to_host(a, bits, sizeof bits));
  for (int i = 0; i < 12; ++i) assert_int_equal(bits[i], 0x3FC0); /* 1.5 in bfloat16 */
  spmd_array_destroy(a);

  assert_ok(spmd_array_full(s, SPMD_F16, 1, shape, -2.0, &a));
  assert_ok(spmd_array_to_host(a, bits, sizeof bits));
  for (int i = 0; i < 12; ++i) assert_int_equal(bits[i], 0xC000); /* -2 in float16 */
  spmd_array_destroy(a);

  assert_ok(spmd_array_zeros(s, SPMD_F64, 1, shape, &a));
  double f64[12];
  assert_ok(spmd_array_to_host(a, f64, sizeof f64));
  for (int i = 0; i < 12; ++i) assert_float_equal(f64[i], 0.0, 0.0);
  spmd_array_destroy(a);

  assert_ok(spmd_array_full(s, SPMD_BOOL, 1, shape, 0.25, &a));
  uint8_t b[12];
  assert_ok(spmd_array_to_host(a, b, sizeof b));
  for (int i = 0; i < 12; ++i) assert_int_equal(b[i], 1);
  spmd_array_destroy(a);

  assert_ok(spmd_array_arange(s, SPMD_F64, 1, shape, 1.0, 0.5, &a));
  assert_ok(spmd_array_to_host(a, f64, sizeof f64));
  for (int i = 0; i < 12; ++i) assert_float_equal(f64[i], 1.0 + 0.5 * i, 0.0);
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
}

static void single_device_array_has_a_device(void **state) {
  (void)state;
  /* b = jnp.array([2,3,4], device=jax.devices()[1]); b.device */
  spmd_sharding *s;
  assert_ok(spmd_sharding_single_device(rt, 1, &s));
  int32_t values[3] = {2, 3, 4};
  int64_t shape[1] = {3};
  spmd_array *b;
  assert_ok(spmd_array_from_host(s, SPMD_I32, 1, shape, values, sizeof values, &b));
  int device = -1;
  assert_ok(spmd_array_device(b, &device));
  assert_int_equal(device, 1);
  spmd_sharding *got;
  assert_ok(spmd_array_sharding(b, &got));
  char *str;
  assert_ok(spmd_sharding_to_string(got, &str));
  assert_string_result(str, "SingleDeviceSharding(device=CpuDevice(id=1), memory_kind=device)");
  spmd_sharding_destroy(got);
  spmd_array_destroy(b);
  spmd_sharding_destroy(s);

  /* A sharded array has no single device. */
  spmd_sharding *x = test_sharding(mesh24, "x");
  spmd_array *a;
  assert_ok(spmd_array_zeros(x, SPMD_F32, 1, shape, &a));
  assert_fails(spmd_array_device(a, &device), SPMD_ERR_INVALID_ARGUMENT,
               "array: spread over 8 devices");
  spmd_array_destroy(a);
  spmd_sharding_destroy(x);
}

static void scalars_and_empty_arrays(void **state) {
  (void)state;
  spmd_sharding *rep = test_sharding(mesh24, "");
  float v = 276.0f, back = 0;
  spmd_array *a;
  assert_ok(spmd_array_from_host(rep, SPMD_F32, 0, NULL, &v, sizeof v, &a));
  assert_ok(spmd_array_to_host(a, &back, sizeof back));
  assert_float_equal(back, 276.0f, 0.0);
  size_t ndim;
  assert_ok(spmd_array_ndim(a, &ndim));
  assert_int_equal(ndim, 0);
  spmd_array_destroy(a);

  spmd_sharding *x = test_sharding(mesh24, "x");
  int64_t empty[2] = {0, 3};
  assert_ok(spmd_array_from_host(x, SPMD_F32, 2, empty, NULL, 0, &a));
  int64_t size;
  assert_ok(spmd_array_size(a, &size));
  assert_int_equal(size, 0);
  assert_ok(spmd_array_to_host(a, NULL, 0));
  spmd_array_destroy(a);
  spmd_sharding_destroy(x);
  spmd_sharding_destroy(rep);
}

static void bad_input_is_rejected(void **state) {
  (void)state;
  spmd_sharding *s = test_sharding(mesh24, "x, y");
  float buf[32] = {0};
  int64_t shape[2] = {4, 8};
  spmd_array *a = NULL;
  assert_fails(spmd_array_from_host(s, SPMD_F32, 2, shape, buf, sizeof buf - 4, &a),
               SPMD_ERR_INVALID_ARGUMENT,
               "nbytes: 124 bytes given, float32(4, 8) needs exactly 128");
  assert_fails(spmd_array_from_host(s, (spmd_dtype)0, 2, shape, buf, sizeof buf, &a),
               SPMD_ERR_INVALID_ARGUMENT, "dtype: unknown dtype 0");
  assert_fails(spmd_array_from_host(s, SPMD_F32, 2, shape, NULL, sizeof buf, &a),
               SPMD_ERR_INVALID_ARGUMENT, "data: NULL host buffer");
  int64_t one[1] = {32};
  assert_fails(spmd_array_from_host(s, SPMD_F32, 1, one, buf, sizeof buf, &a),
               SPMD_ERR_INVALID_ARGUMENT, "names 2 dimensions but the array has 1");
  int64_t neg[2] = {4, -8};
  assert_fails(spmd_array_zeros(s, SPMD_F32, 2, neg, &a), SPMD_ERR_INVALID_ARGUMENT,
               "spmd_array_zeros: shape (4, -8): dimension 1 has negative size -8");
  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  assert_fails(spmd_array_zeros(s, SPMD_F32, 9, nine, &a), SPMD_ERR_INVALID_ARGUMENT,
               "9 dimensions, at most 8");
  int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
  assert_fails(spmd_array_zeros(s, SPMD_F32, 2, huge, &a), SPMD_ERR_INVALID_ARGUMENT,
               "too many elements");
  assert_fails(spmd_array_zeros(NULL, SPMD_F32, 2, shape, &a), SPMD_ERR_INVALID_ARGUMENT,
               "sharding: NULL spmd_sharding handle");
  assert_null(a);

  assert_ok(spmd_array_zeros(s, SPMD_F32, 2, shape, &a));
  assert_fails(spmd_array_to_host(a, buf, 8), SPMD_ERR_INVALID_ARGUMENT,
               "nbytes: 8 bytes given, the array float32(4, 8) needs exactly 128");
  assert_fails(spmd_array_shard_read(a, 8, buf, 16), SPMD_ERR_OUT_OF_RANGE,
               "index: shard 8 does not exist (the array has 8 shards)");
  assert_fails(spmd_array_shard_read(a, 0, buf, 12), SPMD_ERR_INVALID_ARGUMENT,
               "nbytes: 12 bytes given, shard 0 needs exactly 16");
  assert_fails(spmd_array_shard_write(a, 0, buf, 20), SPMD_ERR_INVALID_ARGUMENT,
               "shard 0 needs exactly 16");
  assert_fails(spmd_array_shard_write(a, 0, NULL, 16), SPMD_ERR_INVALID_ARGUMENT, "data: NULL");
  spmd_shard_info info = {sizeof info, 0, 0, 0, {0}, {0}, {0}};
  assert_fails(spmd_array_shard_info(a, 9, &info), SPMD_ERR_OUT_OF_RANGE, "index: shard 9");
  spmd_array_destroy(a);
  assert_fails(spmd_array_to_host(a, buf, sizeof buf), SPMD_ERR_INVALID_ARGUMENT,
               "array: not a live spmd_array");
  assert_fails(spmd_array_block_until_ready(a), SPMD_ERR_INVALID_ARGUMENT, "not a live");
  spmd_sharding_destroy(s);
}

/* Arrays the library fills come with their capacity: too small is an
 * error that still says how many values are needed, and nothing is
 * written; a capacity of 0 asks for the count alone. */
static void shape_queries_respect_the_callers_capacity(void **state) {
  (void)state;
  spmd_sharding *s = test_sharding(mesh24, "x, y");
  const int64_t shape[3] = {4, 8, 3};
  spmd_array *a = NULL;
  assert_ok(spmd_array_zeros(s, SPMD_F32, 3, shape, &a));
  size_t ndim = 0;
  assert_ok(spmd_array_shape(a, 0, NULL, &ndim));
  assert_int_equal(ndim, 3);
  int64_t got[3] = {-1, -1, -1};
  ndim = 0;
  assert_fails(spmd_array_shape(a, 2, got, &ndim), SPMD_ERR_OUT_OF_RANGE,
               "capacity: 2 values, but the shape has 3");
  assert_int_equal(ndim, 3);
  assert_int_equal(got[0], -1);
  assert_ok(spmd_array_shape(a, 3, got, NULL));
  assert_memory_equal(got, shape, sizeof shape);
  int64_t coords[1];
  assert_fails(spmd_mesh_device_coords(mesh24, 5, 1, coords, &ndim), SPMD_ERR_OUT_OF_RANGE,
               "capacity: 1 values, but the mesh has 2");
  assert_int_equal(ndim, 2);
  /* Shard info by device as by position. */
  spmd_shard_info by_index = SPMD_SHARD_INFO_INIT, by_device = SPMD_SHARD_INFO_INIT;
  assert_ok(spmd_array_shard_info(a, 6, &by_index));
  assert_ok(spmd_array_shard_info_of_device(a, by_index.device, &by_device));
  assert_int_equal(by_device.device, by_index.device);
  assert_memory_equal(by_device.start, by_index.start, sizeof by_index.start);
  assert_fails(spmd_array_shard_info_of_device(a, 99, &by_device), SPMD_ERR_INVALID_ARGUMENT,
               "no shard of the array is on device 99");
  assert_ok(spmd_sharding_shard_info_of_device(s, 3, shape, 5, &by_device));
  assert_int_equal(by_device.device, 5);
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(shape_queries_respect_the_callers_capacity),
      cmocka_unit_test(round_trip_every_dtype),
      cmocka_unit_test(shards_hold_their_blocks),
      cmocka_unit_test(generators_fill_every_dtype),
      cmocka_unit_test(single_device_array_has_a_device),
      cmocka_unit_test(scalars_and_empty_arrays),
      cmocka_unit_test(bad_input_is_rejected),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
