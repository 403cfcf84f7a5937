/* Shards shared with other libraries through DLPack (spmd/dlpack.h): a
 * shard exported without a copy, tensors adopted as blocks, the deleters'
 * one call each, and every refusal naming its argument. On the cuda
 * platform the tensors are device memory the test never dereferences:
 * their values are checked by adopting them back and reading the array. */
#include "spmd_test.h"

#include "spmd/dlpack.h"

enum { N = 16, SHARDS = 8 };

static spmd_mesh *mesh8(void) {
  const int64_t shape[1] = {SHARDS};
  return test_mesh(suite_rt, 1, shape);
}

/* arange(16) as float32, sharded over "x". */
static spmd_array *arange16(spmd_mesh *m) {
  float v[N];
  for (int i = 0; i < N; ++i) v[i] = (float)i;
  const int64_t shape[1] = {N};
  return test_put(m, "x", SPMD_F32, 1, shape, v);
}

/* A tensor wrapping another, counting its deleter's calls. */
typedef struct counted {
  DLManagedTensor tensor;
  DLManagedTensor *inner;
  int *calls;
} counted;

static void counted_delete(DLManagedTensor *self) {
  counted *c = (counted *)self->manager_ctx;
  ++*c->calls;
  if (c->inner && c->inner->deleter) c->inner->deleter(c->inner);
  free(c);
}

static DLManagedTensor *count_deletes(DLManagedTensor *inner, int *calls) {
  counted *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->tensor.dl_tensor = inner->dl_tensor;
  c->tensor.manager_ctx = c;
  c->tensor.deleter = counted_delete;
  c->inner = inner;
  c->calls = calls;
  return &c->tensor;
}

static int shard_device(const spmd_array *a, size_t i) {
  spmd_shard_info info = SPMD_SHARD_INFO_INIT;
  assert_ok(spmd_array_shard_info(a, i, &info));
  return info.device;
}

/* Every shard of `a` exported, each wrapped to count its deleter. */
static void export_all(const spmd_array *a, DLManagedTensor **t, int *devices, int *calls) {
  for (size_t i = 0; i < SHARDS; ++i) {
    DLManagedTensor *raw = NULL;
    assert_ok(spmd_array_shard_to_dlpack(a, i, &raw));
    t[i] = count_deletes(raw, calls);
    devices[i] = shard_device(a, i);
  }
}

/* The tensors adopted as a float32 array of N laid out by `spec`. */
static spmd_array *adopt16(spmd_mesh *m, const char *spec, const int *devices,
                           DLManagedTensor *const *t) {
  spmd_sharding *s = test_sharding(m, spec);
  const int64_t shape[1] = {N};
  spmd_array *b = NULL;
  assert_ok(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS, devices, t, &b));
  spmd_sharding_destroy(s);
  return b;
}

/* Asserts `a` holds scale * i at index i (float32, N elements). */
static void assert_scaled_arange(const spmd_array *a, float scale) {
  float got[N];
  assert_ok(spmd_array_to_host(a, got, sizeof got));
  for (int i = 0; i < N; ++i) assert_true(got[i] == scale * (float)i);
}

static void an_exported_shard_describes_its_block(void **state) {
  (void)state;
  skip_on_platform("sim", "the sim platform's memory cannot be shared (a test below says so)");
  spmd_mesh *m = mesh8();
  spmd_array *a = arange16(m);
  for (size_t i = 0; i < SHARDS; ++i) {
    DLManagedTensor *t = NULL;
    assert_ok(spmd_array_shard_to_dlpack(a, i, &t));
    assert_non_null(t->deleter);
    const DLTensor *d = &t->dl_tensor;
    assert_int_equal(d->ndim, 1);
    assert_int_equal(d->shape[0], 2);
    assert_null(d->strides);
    assert_int_equal(d->byte_offset, 0);
    assert_int_equal(d->dtype.code, kDLFloat);
    assert_int_equal(d->dtype.bits, 32);
    assert_int_equal(d->dtype.lanes, 1);
    assert_non_null(d->data);
    if (test_platform_is("cuda")) {
      assert_int_equal(d->device.device_type, kDLCUDA);
      assert_int_equal(d->device.device_id, 0);
    } else {
      /* Host memory: the block's values, read in place. */
      assert_int_equal(d->device.device_type, kDLCPU);
      const float *v = (const float *)d->data;
      assert_true(v[0] == (float)(2 * i) && v[1] == (float)(2 * i + 1));
    }
    t->deleter(t);
  }
  spmd_array_destroy(a);
  spmd_mesh_destroy(m);
}

static void every_dtype_has_its_dlpack_type(void **state) {
  (void)state;
  skip_on_platform("sim", "the sim platform's memory cannot be shared");
  spmd_mesh *m = mesh8();
  spmd_sharding *s = test_sharding(m, "x");
  const struct {
    spmd_dtype dtype;
    uint8_t code, bits;
  } want[] = {{SPMD_F32, kDLFloat, 32}, {SPMD_F64, kDLFloat, 64}, {SPMD_F16, kDLFloat, 16},
              {SPMD_BF16, kDLBfloat, 16}, {SPMD_I32, kDLInt, 32},  {SPMD_I64, kDLInt, 64},
              {SPMD_U8, kDLUInt, 8},      {SPMD_BOOL, 6, 8},        {SPMD_I8, kDLInt, 8},
              {SPMD_I16, kDLInt, 16},     {SPMD_U16, kDLUInt, 16},  {SPMD_U32, kDLUInt, 32}};
  const int64_t shape[1] = {N};
  for (size_t k = 0; k < sizeof want / sizeof want[0]; ++k) {
    spmd_array *a = NULL;
    assert_ok(spmd_array_zeros(s, want[k].dtype, 1, shape, &a));
    DLManagedTensor *t[SHARDS];
    int devices[SHARDS], calls = 0;
    export_all(a, t, devices, &calls);
    assert_int_equal(t[3]->dl_tensor.dtype.code, want[k].code);
    assert_int_equal(t[3]->dl_tensor.dtype.bits, want[k].bits);
    /* The same type comes back in. */
    spmd_array *back = NULL;
    assert_ok(spmd_array_from_dlpack(s, want[k].dtype, 1, shape, SHARDS, devices, t, &back));
    spmd_array_destroy(back);
    assert_int_equal(calls, SHARDS);
    spmd_array_destroy(a);
  }
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
}

static void exported_shards_adopted_back_give_the_same_array_without_copies(void **state) {
  (void)state;
  skip_on_platform("sim", "the sim platform's memory cannot be shared");
  spmd_mesh *m = mesh8();
  spmd_array *a = arange16(m);
  DLManagedTensor *t[SHARDS];
  int devices[SHARDS], calls = 0;
  export_all(a, t, devices, &calls);
  /* Devices in any order: reversed. */
  DLManagedTensor *rt[SHARDS];
  int rdev[SHARDS];
  for (int i = 0; i < SHARDS; ++i) {
    rt[i] = t[SHARDS - 1 - i];
    rdev[i] = devices[SHARDS - 1 - i];
  }
  spmd_array *b = adopt16(m, "x", rdev, rt);
  assert_int_equal(calls, 0);
  /* The original goes first: the exports keep its memory. */
  spmd_array_destroy(a);
  assert_scaled_arange(b, 1.0f);
  /* Ops read the adopted blocks where they are. */
  spmd_array *twice = NULL;
  assert_ok(spmd_binary(SPMD_BINARY_ADD, b, b, NULL, &twice));
  assert_scaled_arange(twice, 2.0f);
  spmd_array_destroy(twice);
  spmd_array_destroy(b);
  assert_int_equal(calls, SHARDS); /* each deleter once */
  spmd_mesh_destroy(m);
}

static void a_replicated_array_takes_one_tensor_per_device(void **state) {
  (void)state;
  skip_on_platform("sim", "the sim platform's memory cannot be shared");
  spmd_mesh *m = mesh8();
  float v[N];
  for (int i = 0; i < N; ++i) v[i] = (float)(3 * i);
  const int64_t shape[1] = {N};
  spmd_array *a = test_put(m, "", SPMD_F32, 1, shape, v);
  DLManagedTensor *t[SHARDS];
  int devices[SHARDS], calls = 0;
  export_all(a, t, devices, &calls);
  assert_int_equal(t[5]->dl_tensor.shape[0], N);
  spmd_array *b = adopt16(m, "", devices, t);
  float got[N];
  assert_ok(spmd_array_shard_read(b, 6, got, sizeof got));
  for (int i = 0; i < N; ++i) assert_true(got[i] == v[i]);
  spmd_array_destroy(b);
  spmd_array_destroy(a);
  assert_int_equal(calls, SHARDS);
  spmd_mesh_destroy(m);
}

static void a_donated_array_leaves_an_exported_shard_as_it_was(void **state) {
  (void)state;
  skip_on_platform("sim", "the sim platform's memory cannot be shared");
  spmd_mesh *m = mesh8();
  spmd_array *a = arange16(m);
  DLManagedTensor *t[SHARDS];
  int devices[SHARDS], calls = 0;
  export_all(a, t, devices, &calls);
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.donate = 1;
  spmd_array *sum = NULL;
  assert_ok(spmd_binary(SPMD_BINARY_ADD, a, a, &o, &sum));
  /* Consumed, as any donated operand... */
  float got[N];
  assert_fails(spmd_array_to_host(a, got, sizeof got), SPMD_ERR_INVALID_ARGUMENT, "donated");
  spmd_array_destroy(a);
  /* ...but the exported memory still holds the old values. */
  spmd_array *b = adopt16(m, "x", devices, t);
  assert_scaled_arange(b, 1.0f);
  assert_scaled_arange(sum, 2.0f);
  spmd_array_destroy(b);
  spmd_array_destroy(sum);
  spmd_mesh_destroy(m);
}

static void host_memory_of_the_callers_is_adopted_on_the_cpu_platform(void **state) {
  (void)state;
  if (!test_platform_is("cpu")) {
    print_message("skipped on %s: host memory is the cpu platform's device memory only\n",
                  getenv("SPMD_PLATFORM"));
    skip();
  }
  spmd_mesh *m = mesh8();
  spmd_sharding *s = test_sharding(m, "x");
  int64_t block[1] = {2};
  int32_t *data[SHARDS];
  DLManagedTensor raw[SHARDS];
  DLManagedTensor *t[SHARDS];
  int devices[SHARDS], calls = 0;
  for (int i = 0; i < SHARDS; ++i) {
    data[i] = malloc(2 * sizeof(int32_t));
    data[i][0] = 10 * i;
    data[i][1] = 10 * i + 1;
    memset(&raw[i], 0, sizeof raw[i]);
    raw[i].dl_tensor.data = data[i];
    raw[i].dl_tensor.device.device_type = kDLCPU;
    raw[i].dl_tensor.ndim = 1;
    raw[i].dl_tensor.dtype.code = kDLInt;
    raw[i].dl_tensor.dtype.bits = 32;
    raw[i].dl_tensor.dtype.lanes = 1;
    raw[i].dl_tensor.shape = block;
    t[i] = count_deletes(&raw[i], &calls);
    devices[i] = i;
  }
  const int64_t shape[1] = {N};
  spmd_array *a = NULL;
  assert_ok(spmd_array_from_dlpack(s, SPMD_I32, 1, shape, SHARDS, devices, t, &a));
  int32_t got[N];
  assert_ok(spmd_array_to_host(a, got, sizeof got));
  for (int i = 0; i < N; ++i) assert_int_equal(got[i], 10 * (i / 2) + i % 2);
  /* The memory is the caller's: a write through it shows. */
  data[3][1] = -7;
  assert_ok(spmd_array_to_host(a, got, sizeof got));
  assert_int_equal(got[7], -7);
  spmd_array_destroy(a);
  assert_int_equal(calls, SHARDS);
  for (int i = 0; i < SHARDS; ++i) free(data[i]);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
}

/* Every refusal: the status, a message naming the argument, and the
 * tensors left with the caller (no deleter called). */
static void bad_tensors_are_refused_by_name_and_stay_the_callers(void **state) {
  (void)state;
  skip_on_platform("sim", "the sim platform's memory cannot be shared");
  spmd_mesh *m = mesh8();
  spmd_array *a = arange16(m);
  spmd_sharding *s = test_sharding(m, "x");
  const int64_t shape[1] = {N};
  DLManagedTensor *t[SHARDS];
  int devices[SHARDS], calls = 0;
  export_all(a, t, devices, &calls);
  spmd_array *b = NULL;
  DLManagedTensor *out = NULL;

  assert_fails(spmd_array_shard_to_dlpack(a, SHARDS, &out), SPMD_ERR_OUT_OF_RANGE, "index");
  assert_fails(spmd_array_shard_to_dlpack(a, 0, NULL), SPMD_ERR_INVALID_ARGUMENT, "out");
  assert_fails(spmd_array_shard_to_dlpack(NULL, 0, &out), SPMD_ERR_INVALID_ARGUMENT, "array");
  assert_fails(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS - 1, devices, t, &b),
               SPMD_ERR_INVALID_ARGUMENT, "count");
  assert_fails(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS, NULL, t, &b),
               SPMD_ERR_INVALID_ARGUMENT, "devices");
  assert_fails(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS, devices, NULL, &b),
               SPMD_ERR_INVALID_ARGUMENT, "tensors");
  assert_fails(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS, devices, t, NULL),
               SPMD_ERR_INVALID_ARGUMENT, "out");
  assert_fails(spmd_array_from_dlpack(NULL, SPMD_F32, 1, shape, SHARDS, devices, t, &b),
               SPMD_ERR_INVALID_ARGUMENT, "sharding");
  assert_fails(spmd_array_from_dlpack(s, SPMD_I32, 1, shape, SHARDS, devices, t, &b),
               SPMD_ERR_INVALID_ARGUMENT, "tensors[0]: of float32 but the array is int32");
  const int64_t other[1] = {32};
  assert_fails(spmd_array_from_dlpack(s, SPMD_F32, 1, other, SHARDS, devices, t, &b),
               SPMD_ERR_INVALID_ARGUMENT, "tensors[0]: of shape (2,)");

  /* Devices: one outside the mesh, one given twice. */
  int bad_devices[SHARDS];
  memcpy(bad_devices, devices, sizeof devices);
  bad_devices[2] = 99;
  assert_fails(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS, bad_devices, t, &b),
               SPMD_ERR_INVALID_ARGUMENT, "devices[2]: device 99");
  bad_devices[2] = devices[1];
  assert_fails(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS, bad_devices, t, &b),
               SPMD_ERR_INVALID_ARGUMENT, "given twice");

  /* Tensors: NULL, the same twice, on another device, strided, misaligned. */
  DLManagedTensor *bad[SHARDS];
  memcpy(bad, t, sizeof t);
  bad[4] = NULL;
  assert_fails(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS, devices, bad, &b),
               SPMD_ERR_INVALID_ARGUMENT, "tensors[4]: NULL");
  bad[4] = t[3];
  assert_fails(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS, devices, bad, &b),
               SPMD_ERR_INVALID_ARGUMENT, "tensors[4]: the same tensor as tensors[3]");
  DLManagedTensor copy = *t[5];
  bad[4] = t[4];
  bad[5] = &copy;
  copy.dl_tensor.device.device_type = test_platform_is("cuda") ? kDLCPU : kDLCUDA;
  assert_fails(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS, devices, bad, &b),
               SPMD_ERR_INVALID_ARGUMENT, "tensors[5]: its memory is on");
  copy = *t[5];
  int64_t strides[1] = {2};
  copy.dl_tensor.strides = strides;
  assert_fails(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS, devices, bad, &b),
               SPMD_ERR_INVALID_ARGUMENT, "tensors[5]: strides that are not compact");
  strides[0] = 1; /* compact strides spelled out are fine: checked below */
  copy = *t[5];
  copy.dl_tensor.byte_offset = 2;
  assert_fails(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS, devices, bad, &b),
               SPMD_ERR_INVALID_ARGUMENT, "tensors[5]: data + byte_offset");
  copy = *t[5];
  copy.dl_tensor.dtype.lanes = 4;
  assert_fails(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS, devices, bad, &b),
               SPMD_ERR_INVALID_ARGUMENT, "x4 lanes");
  assert_null(b);
  assert_int_equal(calls, 0); /* every refused tensor is still the caller's */

  /* Compact strides spelled out are taken. */
  copy = *t[5];
  copy.dl_tensor.strides = strides;
  copy.manager_ctx = NULL;
  copy.deleter = NULL; /* t[5] keeps the memory and is freed below */
  assert_ok(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS, devices, bad, &b));
  assert_scaled_arange(b, 1.0f);
  spmd_array_destroy(b);
  assert_int_equal(calls, SHARDS - 1); /* the others' deleters ran; copy had none */
  t[5]->deleter(t[5]);
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
}

static void the_sim_platform_shares_no_memory(void **state) {
  (void)state;
  if (!test_platform_is("sim")) {
    print_message("skipped on %s: the refusal is the sim platform's\n",
                  getenv("SPMD_PLATFORM") ? getenv("SPMD_PLATFORM") : "cpu");
    skip();
  }
  spmd_mesh *m = mesh8();
  spmd_array *a = arange16(m);
  DLManagedTensor *t = NULL;
  assert_fails(spmd_array_shard_to_dlpack(a, 0, &t), SPMD_ERR_UNSUPPORTED,
               "sim platform's device memory cannot be shared");
  assert_null(t);
  /* Nor adopts any. */
  float data[SHARDS][2] = {{0}};
  int64_t block[1] = {2};
  DLManagedTensor raw[SHARDS];
  DLManagedTensor *given[SHARDS];
  int devices[SHARDS];
  for (int i = 0; i < SHARDS; ++i) {
    memset(&raw[i], 0, sizeof raw[i]);
    raw[i].dl_tensor.data = data[i];
    raw[i].dl_tensor.device.device_type = kDLCPU;
    raw[i].dl_tensor.ndim = 1;
    raw[i].dl_tensor.dtype.code = kDLFloat;
    raw[i].dl_tensor.dtype.bits = 32;
    raw[i].dl_tensor.dtype.lanes = 1;
    raw[i].dl_tensor.shape = block;
    given[i] = &raw[i];
    devices[i] = shard_device(a, (size_t)i);
  }
  spmd_sharding *s = test_sharding(m, "x");
  const int64_t shape[1] = {N};
  spmd_array *b = NULL;
  assert_fails(spmd_array_from_dlpack(s, SPMD_F32, 1, shape, SHARDS, devices, given, &b),
               SPMD_ERR_UNSUPPORTED, "sim platform's device memory cannot be shared");
  assert_null(b);
  spmd_sharding_destroy(s);
  spmd_array_destroy(a);
  spmd_mesh_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(an_exported_shard_describes_its_block),
      cmocka_unit_test(every_dtype_has_its_dlpack_type),
      cmocka_unit_test(exported_shards_adopted_back_give_the_same_array_without_copies),
      cmocka_unit_test(a_replicated_array_takes_one_tensor_per_device),
      cmocka_unit_test(a_donated_array_leaves_an_exported_shard_as_it_was),
      cmocka_unit_test(host_memory_of_the_callers_is_adopted_on_the_cpu_platform),
      cmocka_unit_test(bad_tensors_are_refused_by_name_and_stay_the_callers),
      cmocka_unit_test(the_sim_platform_shares_no_memory),
  };
  return cmocka_run_group_tests(tests, suite_setup, suite_teardown);
}
