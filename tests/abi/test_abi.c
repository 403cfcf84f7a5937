/* The ABI promise, as a specification: the version numbers come from one
 * place, public struct layouts and enumerator values never move, and options
 * structs grow without breaking callers built against an older or a newer
 * libspmd (docs/abi.md). */
#include <stdlib.h>

#include "spmd_test.h"

/* ---- Layouts, pinned. A failure here is an ABI break: append new fields
 * instead (docs/abi.md), or bump the major version and the baseline. ----- */

#define PIN_SIZE(type, bytes) \
  _Static_assert(sizeof(type) == (bytes), "sizeof(" #type ") moved")
#define PIN_FIELD(type, field, bytes) \
  _Static_assert(offsetof(type, field) == (bytes), #type "." #field " moved")

/* Every options or info struct starts with struct_size, on every target. */
PIN_FIELD(spmd_runtime_options, struct_size, 0);
PIN_FIELD(spmd_device_info, struct_size, 0);
PIN_FIELD(spmd_shard_info, struct_size, 0);
PIN_FIELD(spmd_visualize_options, struct_size, 0);
PIN_FIELD(spmd_block, struct_size, 0);
PIN_FIELD(spmd_shard_map_options, struct_size, 0);
PIN_FIELD(spmd_collective_options, struct_size, 0);
PIN_FIELD(spmd_op_options, struct_size, 0);
PIN_FIELD(spmd_dot_dims, struct_size, 0);

#if defined(__LP64__) || defined(_LP64)
/* LP64 (x86-64, aarch64 Linux): 8-byte size_t and pointers, 4-byte int and
 * enums. */
PIN_SIZE(spmd_runtime_options, 56); /* 1.4 appended distributed, mpi_comm_given, mpi_comm */
PIN_FIELD(spmd_runtime_options, platform, 8);
PIN_FIELD(spmd_runtime_options, cpu_device_count, 12);
PIN_FIELD(spmd_runtime_options, worker_threads, 16);
PIN_FIELD(spmd_runtime_options, device_cache_bytes, 24);
PIN_FIELD(spmd_runtime_options, devices_per_gpu, 32);
PIN_FIELD(spmd_runtime_options, callback_memory, 36);
PIN_FIELD(spmd_runtime_options, distributed, 40); /* 1.3's sizeof: nothing in its padding */
PIN_FIELD(spmd_runtime_options, mpi_comm_given, 44);
PIN_FIELD(spmd_runtime_options, mpi_comm, 48);

PIN_SIZE(spmd_device_info, 56); /* 1.3 appended memory_bytes, compute_capability */
PIN_FIELD(spmd_device_info, id, 8);
PIN_FIELD(spmd_device_info, platform, 12);
PIN_FIELD(spmd_device_info, platform_name, 16);
PIN_FIELD(spmd_device_info, kind, 24);
PIN_FIELD(spmd_device_info, process_index, 32);
PIN_FIELD(spmd_device_info, local_index, 36);
PIN_FIELD(spmd_device_info, memory_bytes, 40);
PIN_FIELD(spmd_device_info, compute_capability, 48);

PIN_SIZE(spmd_shard_info, 216);
PIN_FIELD(spmd_shard_info, device, 8);
PIN_FIELD(spmd_shard_info, replica_id, 12);
PIN_FIELD(spmd_shard_info, ndim, 16);
PIN_FIELD(spmd_shard_info, start, 24);
PIN_FIELD(spmd_shard_info, stop, 88);
PIN_FIELD(spmd_shard_info, local_shape, 152);

PIN_SIZE(spmd_visualize_options, 32);
PIN_FIELD(spmd_visualize_options, ascii, 8);
PIN_FIELD(spmd_visualize_options, max_width, 12);
PIN_FIELD(spmd_visualize_options, min_width, 16);
PIN_FIELD(spmd_visualize_options, scale, 24);

PIN_SIZE(spmd_block, 104); /* 1.3 appended memory_kind */
PIN_FIELD(spmd_block, data, 8);
PIN_FIELD(spmd_block, dtype, 16);
PIN_FIELD(spmd_block, ndim, 24);
PIN_FIELD(spmd_block, shape, 32);
PIN_FIELD(spmd_block, memory_kind, 96);

PIN_SIZE(spmd_shard_map_options, 40);
PIN_FIELD(spmd_shard_map_options, check_rep, 8);
PIN_FIELD(spmd_shard_map_options, timeout_ms, 16);
PIN_FIELD(spmd_shard_map_options, print_fn, 24);
PIN_FIELD(spmd_shard_map_options, print_user_data, 32);

PIN_SIZE(spmd_collective_options, 56);
PIN_FIELD(spmd_collective_options, axis, 8);
PIN_FIELD(spmd_collective_options, concat_axis, 16);
PIN_FIELD(spmd_collective_options, tiled, 24);
PIN_FIELD(spmd_collective_options, npairs, 32);
PIN_FIELD(spmd_collective_options, pairs, 40);
PIN_FIELD(spmd_collective_options, timeout_ms, 48);

PIN_SIZE(spmd_op_options, 24);
PIN_FIELD(spmd_op_options, out_sharding, 8);
PIN_FIELD(spmd_op_options, donate, 16);

PIN_SIZE(spmd_dot_dims, 56);
PIN_FIELD(spmd_dot_dims, nbatch, 8);
PIN_FIELD(spmd_dot_dims, lhs_batch, 16);
PIN_FIELD(spmd_dot_dims, rhs_batch, 24);
PIN_FIELD(spmd_dot_dims, ncontract, 32);
PIN_FIELD(spmd_dot_dims, lhs_contract, 40);
PIN_FIELD(spmd_dot_dims, rhs_contract, 48);
#endif

/* Plain value structs (no struct_size): fixed on every target. */
PIN_SIZE(spmd_key, 8);
PIN_FIELD(spmd_key, words, 0);

_Static_assert(SPMD_MAX_NDIM == 8, "SPMD_MAX_NDIM sizes spmd_shard_info");
_Static_assert(sizeof(spmd_status) == sizeof(int), "enums are int-sized");
_Static_assert(sizeof(spmd_dtype) == sizeof(int), "enums are int-sized");
_Static_assert(sizeof(spmd_platform) == sizeof(int), "enums are int-sized");
_Static_assert(sizeof(spmd_distributed) == sizeof(int), "enums are int-sized");

/* Enumerator values are part of the ABI. */
_Static_assert(SPMD_OK == 0 && SPMD_ERR_INVALID_ARGUMENT == 1 &&
                   SPMD_ERR_OUT_OF_RANGE == 2 && SPMD_ERR_OUT_OF_MEMORY == 3 &&
                   SPMD_ERR_UNSUPPORTED == 4 && SPMD_ERR_TIMEOUT == 5 &&
                   SPMD_ERR_CALLBACK == 6 && SPMD_ERR_INTERNAL == 7,
               "spmd_status values moved");
_Static_assert(SPMD_DTYPE_INVALID == 0 && SPMD_F32 == 1 && SPMD_F64 == 2 &&
                   SPMD_F16 == 3 && SPMD_BF16 == 4 && SPMD_I32 == 5 &&
                   SPMD_I64 == 6 && SPMD_U8 == 7 && SPMD_BOOL == 8 && SPMD_I8 == 9 &&
                   SPMD_I16 == 10 && SPMD_U16 == 11 && SPMD_U32 == 12,
               "spmd_dtype values moved");
_Static_assert(SPMD_PLATFORM_DEFAULT == 0 && SPMD_PLATFORM_CPU == 1 &&
                   SPMD_PLATFORM_CUDA == 2 && SPMD_PLATFORM_SIM == 3,
               "spmd_platform values moved");
_Static_assert(SPMD_MEMORY_DEFAULT == 0 && SPMD_MEMORY_DEVICE == 1 &&
                   SPMD_MEMORY_HOST_MAPPED == 2 && SPMD_MEMORY_HOST == 3,
               "spmd_memory_kind values moved");
_Static_assert(SPMD_DISTRIBUTED_DEFAULT == 0 && SPMD_DISTRIBUTED_NONE == 1 &&
                   SPMD_DISTRIBUTED_MPI == 2,
               "spmd_distributed values moved");
_Static_assert(SPMD_SHARDING_NAMED == 1 && SPMD_SHARDING_SINGLE_DEVICE == 2,
               "spmd_sharding_kind values moved");
_Static_assert(SPMD_COLLECTIVE_PSUM == 1 && SPMD_COLLECTIVE_PMEAN == 2 &&
                   SPMD_COLLECTIVE_PMAX == 3 && SPMD_COLLECTIVE_PMIN == 4 &&
                   SPMD_COLLECTIVE_ALL_GATHER == 5 &&
                   SPMD_COLLECTIVE_PSUM_SCATTER == 6 &&
                   SPMD_COLLECTIVE_ALL_TO_ALL == 7 &&
                   SPMD_COLLECTIVE_PPERMUTE == 8,
               "spmd_collective_kind values moved");
_Static_assert(SPMD_UNARY_NEG == 1 && SPMD_UNARY_ABS == 2 && SPMD_UNARY_EXP == 3 &&
                   SPMD_UNARY_LOG == 4 && SPMD_UNARY_SIN == 5 && SPMD_UNARY_COS == 6 &&
                   SPMD_UNARY_TANH == 7 && SPMD_UNARY_SQRT == 8 && SPMD_UNARY_RSQRT == 9 &&
                   SPMD_UNARY_RELU == 10 && SPMD_UNARY_LOGISTIC == 11 &&
                   SPMD_UNARY_GELU_TANH == 12 && SPMD_UNARY_GELU_EXACT == 13,
               "spmd_unary_op values moved");
_Static_assert(SPMD_BINARY_ADD == 1 && SPMD_BINARY_SUB == 2 && SPMD_BINARY_MUL == 3 &&
                   SPMD_BINARY_DIV == 4 && SPMD_BINARY_MAX == 5 && SPMD_BINARY_MIN == 6 &&
                   SPMD_BINARY_POW == 7 && SPMD_BINARY_EQ == 8 && SPMD_BINARY_NE == 9 &&
                   SPMD_BINARY_LT == 10 && SPMD_BINARY_LE == 11 && SPMD_BINARY_GT == 12 &&
                   SPMD_BINARY_GE == 13,
               "spmd_binary_op values moved");
_Static_assert(SPMD_REDUCE_SUM == 1 && SPMD_REDUCE_MEAN == 2 && SPMD_REDUCE_MAX == 3 &&
                   SPMD_REDUCE_MIN == 4,
               "spmd_reduce_op values moved");

/* ---- Version: one number, from the CMake project version. ---------------- */

static void header_macros_match_the_project_version(void **state) {
  (void)state;
  assert_int_equal(SPMD_VERSION_MAJOR, SPMD_EXPECT_VERSION_MAJOR);
  assert_int_equal(SPMD_VERSION_MINOR, SPMD_EXPECT_VERSION_MINOR);
  assert_int_equal(SPMD_VERSION_PATCH, SPMD_EXPECT_VERSION_PATCH);
  assert_string_equal(SPMD_VERSION_STRING, SPMD_EXPECT_VERSION);
  assert_int_equal(SPMD_VERSION_NUMBER, SPMD_EXPECT_VERSION_MAJOR * 10000 +
                                            SPMD_EXPECT_VERSION_MINOR * 100 +
                                            SPMD_EXPECT_VERSION_PATCH);
}

static void loaded_library_reports_the_project_version(void **state) {
  (void)state;
  assert_int_equal(spmd_version(), SPMD_VERSION_NUMBER);
  assert_string_equal(spmd_version_string(), SPMD_EXPECT_VERSION);
}

/* ---- Options structs grow safely. ---------------------------------------- */

/* A caller's struct laid out in a buffer whose bytes past struct_size are
 * 0xff: a library that read them would see -1 in every int field and
 * reject it, so success proves it stopped at struct_size. */
typedef union caller_buffer {
  unsigned char bytes[256];
  spmd_runtime_options runtime;
  spmd_visualize_options visualize;
  spmd_device_info device;
  spmd_shard_info shard;
  spmd_shard_map_options shard_map;
  spmd_collective_options collective;
  double align_;
} caller_buffer;

static void poison(caller_buffer *b) { memset(b->bytes, 0xff, sizeof b->bytes); }

static int device_count_of(spmd_runtime *rt) {
  int n = -1;
  assert_ok(spmd_runtime_device_count(rt, &n));
  return n;
}

static void older_runtime_options_take_defaults_for_missing_fields(void **state) {
  (void)state;
  spmd_runtime *dflt = NULL;
  assert_ok(spmd_runtime_create(NULL, &dflt));

  /* A caller that knew only `platform`. */
  caller_buffer b;
  poison(&b);
  b.runtime.struct_size = offsetof(spmd_runtime_options, cpu_device_count);
  b.runtime.platform = SPMD_PLATFORM_CPU;
  spmd_runtime *rt = NULL;
  assert_ok(spmd_runtime_create(&b.runtime, &rt));
  assert_int_equal(device_count_of(rt), device_count_of(dflt));
  spmd_runtime_destroy(rt);

  /* One that knew `cpu_device_count` but not `worker_threads`. */
  poison(&b);
  b.runtime.struct_size = offsetof(spmd_runtime_options, worker_threads);
  b.runtime.platform = SPMD_PLATFORM_CPU;
  b.runtime.cpu_device_count = 3;
  rt = NULL;
  assert_ok(spmd_runtime_create(&b.runtime, &rt));
  assert_int_equal(device_count_of(rt), 3);
  spmd_runtime_destroy(rt);

  /* A 1.3 caller: its poisoned bytes where 1.4 put `distributed` and the
   * communicator are never read, so its runtime is of one process. */
  poison(&b);
  b.runtime.struct_size = offsetof(spmd_runtime_options, distributed);
  b.runtime.platform = SPMD_PLATFORM_CPU;
  b.runtime.cpu_device_count = 3;
  b.runtime.worker_threads = 0;
  b.runtime.device_cache_bytes = 0;
  b.runtime.devices_per_gpu = 0;
  b.runtime.callback_memory = SPMD_MEMORY_DEFAULT;
  rt = NULL;
  assert_ok(spmd_runtime_create(&b.runtime, &rt));
  int processes = 0;
  assert_ok(spmd_runtime_process_count(rt, &processes));
  assert_int_equal(processes, 1);
  spmd_runtime_destroy(rt);
  spmd_runtime_destroy(dflt);
}

/* What a caller built against a newer libspmd passes: today's fields plus
 * some this library has never heard of. */
typedef struct newer_runtime_options {
  spmd_runtime_options known;
  uint64_t future_field;
  void *future_pointer;
} newer_runtime_options;

static void newer_runtime_options_with_unset_new_fields_are_accepted(void **state) {
  (void)state;
  newer_runtime_options o;
  memset(&o, 0, sizeof o);
  o.known.struct_size = sizeof o;
  o.known.platform = SPMD_PLATFORM_CPU;
  o.known.cpu_device_count = 3;
  spmd_runtime *rt = NULL;
  assert_ok(spmd_runtime_create(&o.known, &rt));
  assert_int_equal(device_count_of(rt), 3);
  spmd_runtime_destroy(rt);
}

static void newer_runtime_options_with_new_fields_set_are_rejected(void **state) {
  (void)state;
  newer_runtime_options o;
  memset(&o, 0, sizeof o);
  o.known.struct_size = sizeof o;
  o.known.platform = SPMD_PLATFORM_CPU;
  o.future_field = 1;
  spmd_runtime *rt = NULL;
  assert_fails(spmd_runtime_create(&o.known, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "built against a newer libspmd");
  assert_fails(spmd_runtime_create(&o.known, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "options->struct_size");
  assert_null(rt);

  o.future_field = 0;
  o.future_pointer = &o;
  assert_fails(spmd_runtime_create(&o.known, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "newer libspmd");
  assert_null(rt);
}

static void options_without_struct_size_are_rejected(void **state) {
  (void)state;
  spmd_runtime_options o;
  memset(&o, 0, sizeof o);
  spmd_runtime *rt = NULL;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "too small");
  assert_null(rt);

  spmd_visualize_options v;
  memset(&v, 0, sizeof v);
  spmd_runtime *cpu = test_runtime(4);
  spmd_sharding *s = NULL;
  assert_ok(spmd_sharding_single_device(cpu, 0, &s));
  const int64_t shape[] = {4};
  char *pic = NULL;
  assert_fails(spmd_sharding_visualize(s, 1, shape, &v, &pic),
               SPMD_ERR_INVALID_ARGUMENT, "too small");
  assert_null(pic);
  spmd_sharding_destroy(s);
  spmd_runtime_destroy(cpu);
}

/* Each struct's _init function writes what its _INIT macro holds, into
 * exactly `size` bytes: an older caller's smaller struct is never written
 * past its end, a newer caller's unknown tail is zeroed (zero means
 * "default" in every field). */
#define CHECK_INIT(type, macro, init)                                        \
  do {                                                                       \
    const type want = macro;                                                 \
    union {                                                                  \
      type s;                                                                \
      unsigned char bytes[sizeof(type) + 32];                                \
    } u;                                                                     \
    memset(&u, 0xff, sizeof u);                                              \
    assert_ok(init(&u.s, sizeof(type)));                                     \
    same_##type(&u.s, &want);                                                \
    for (size_t i = sizeof(type); i < sizeof u; ++i)                         \
      assert_int_equal(u.bytes[i], 0xff);                                    \
    /* Older: only its own bytes. */                                         \
    const size_t older = sizeof(type) - 8;                                   \
    memset(&u, 0xff, sizeof u);                                              \
    assert_ok(init(&u.s, older));                                            \
    assert_int_equal(u.s.struct_size, older);                                \
    for (size_t i = older; i < sizeof u; ++i) assert_int_equal(u.bytes[i], 0xff); \
    /* Newer: its unknown tail zeroed. */                                    \
    memset(&u, 0xff, sizeof u);                                              \
    assert_ok(init(&u.s, sizeof u));                                         \
    assert_int_equal(u.s.struct_size, sizeof u);                             \
    for (size_t i = sizeof(type); i < sizeof u; ++i) assert_int_equal(u.bytes[i], 0); \
    /* Sizes no struct has. */                                               \
    assert_fails(init(&u.s, 4), SPMD_ERR_INVALID_ARGUMENT, "size: 4 is too small"); \
    assert_fails(init(&u.s, 4096), SPMD_ERR_INVALID_ARGUMENT, "size: 4096");  \
    assert_fails(init(NULL, sizeof(type)), SPMD_ERR_INVALID_ARGUMENT, "NULL"); \
  } while (0)

/* Field by field (padding bytes may differ). */
static void same_spmd_runtime_options(const spmd_runtime_options *a,
                                      const spmd_runtime_options *b) {
  assert_int_equal(a->struct_size, b->struct_size);
  assert_int_equal(a->platform, b->platform);
  assert_int_equal(a->cpu_device_count, b->cpu_device_count);
  assert_int_equal(a->worker_threads, b->worker_threads);
  assert_int_equal(a->device_cache_bytes, b->device_cache_bytes);
  assert_int_equal(a->devices_per_gpu, b->devices_per_gpu);
  assert_int_equal(a->callback_memory, b->callback_memory);
  assert_int_equal(a->distributed, b->distributed);
  assert_int_equal(a->mpi_comm_given, b->mpi_comm_given);
  assert_int_equal(a->mpi_comm, b->mpi_comm);
}
static void same_spmd_visualize_options(const spmd_visualize_options *a,
                                        const spmd_visualize_options *b) {
  assert_int_equal(a->struct_size, b->struct_size);
  assert_int_equal(a->ascii, b->ascii);
  assert_int_equal(a->max_width, b->max_width);
  assert_int_equal(a->min_width, b->min_width);
  assert_true(a->scale == b->scale);
}
static void same_spmd_shard_map_options(const spmd_shard_map_options *a,
                                        const spmd_shard_map_options *b) {
  assert_int_equal(a->struct_size, b->struct_size);
  assert_int_equal(a->check_rep, b->check_rep);
  assert_int_equal(a->timeout_ms, b->timeout_ms);
  assert_true(a->print_fn == b->print_fn && a->print_user_data == b->print_user_data);
}
static void same_spmd_collective_options(const spmd_collective_options *a,
                                         const spmd_collective_options *b) {
  assert_int_equal(a->struct_size, b->struct_size);
  assert_int_equal(a->axis, b->axis);
  assert_int_equal(a->concat_axis, b->concat_axis);
  assert_int_equal(a->tiled, b->tiled);
  assert_int_equal(a->npairs, b->npairs);
  assert_true(a->pairs == b->pairs);
  assert_int_equal(a->timeout_ms, b->timeout_ms);
}
static void same_spmd_block(const spmd_block *a, const spmd_block *b) {
  assert_int_equal(a->struct_size, b->struct_size);
  assert_true(a->data == b->data);
  assert_int_equal(a->dtype, b->dtype);
  assert_int_equal(a->ndim, b->ndim);
  assert_memory_equal(a->shape, b->shape, sizeof a->shape);
}
static void same_spmd_device_info(const spmd_device_info *a, const spmd_device_info *b) {
  assert_int_equal(a->struct_size, b->struct_size);
  assert_int_equal(a->id, b->id);
  assert_int_equal(a->platform, b->platform);
  assert_true(a->platform_name == b->platform_name && a->kind == b->kind);
  assert_int_equal(a->process_index, b->process_index);
  assert_int_equal(a->local_index, b->local_index);
}
static void same_spmd_shard_info(const spmd_shard_info *a, const spmd_shard_info *b) {
  assert_int_equal(a->struct_size, b->struct_size);
  assert_int_equal(a->device, b->device);
  assert_int_equal(a->replica_id, b->replica_id);
  assert_int_equal(a->ndim, b->ndim);
  assert_memory_equal(a->start, b->start, sizeof a->start);
  assert_memory_equal(a->stop, b->stop, sizeof a->stop);
  assert_memory_equal(a->local_shape, b->local_shape, sizeof a->local_shape);
}

static void init_functions_write_the_init_macros_into_the_callers_size(void **state) {
  (void)state;
  CHECK_INIT(spmd_runtime_options, SPMD_RUNTIME_OPTIONS_INIT, spmd_runtime_options_init);
  CHECK_INIT(spmd_visualize_options, SPMD_VISUALIZE_OPTIONS_INIT, spmd_visualize_options_init);
  CHECK_INIT(spmd_shard_map_options, SPMD_SHARD_MAP_OPTIONS_INIT, spmd_shard_map_options_init);
  CHECK_INIT(spmd_collective_options, SPMD_COLLECTIVE_OPTIONS_INIT, spmd_collective_options_init);
  CHECK_INIT(spmd_block, SPMD_BLOCK_INIT, spmd_block_init);
  CHECK_INIT(spmd_device_info, SPMD_DEVICE_INFO_INIT, spmd_device_info_init);
  CHECK_INIT(spmd_shard_info, SPMD_SHARD_INFO_INIT, spmd_shard_info_init);
}

static char *picture(const spmd_sharding *s, const spmd_visualize_options *o) {
  const int64_t shape[] = {8, 8};
  char *pic = NULL;
  assert_ok(spmd_sharding_visualize(s, 2, shape, o, &pic));
  return pic;
}

static void older_visualize_options_take_defaults_for_missing_fields(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  const int64_t mesh_shape[] = {2, 2};
  spmd_mesh *m = test_mesh(rt, 2, mesh_shape);
  spmd_sharding *s = test_sharding(m, "x, y");

  spmd_visualize_options ascii = SPMD_VISUALIZE_OPTIONS_INIT;
  ascii.ascii = 1;
  char *expected = test_platform_text(picture(s, &ascii));

  /* A caller that knew only `ascii`: widths and scale are its bytes past
   * struct_size, poisoned, and must be the defaults. */
  caller_buffer b;
  poison(&b);
  b.visualize.struct_size = offsetof(spmd_visualize_options, max_width);
  b.visualize.ascii = 1;
  assert_string_result(picture(s, &b.visualize), expected);

  /* A newer caller with its extra fields zero gets the same picture, one
   * with an extra field set is refused. */
  struct {
    spmd_visualize_options known;
    int future[4];
  } newer;
  memset(&newer, 0, sizeof newer);
  newer.known.struct_size = sizeof newer;
  newer.known.ascii = 1;
  assert_string_result(picture(s, &newer.known), expected);
  newer.future[3] = 7;
  const int64_t shape[] = {8, 8};
  char *pic = NULL;
  assert_fails(spmd_sharding_visualize(s, 2, shape, &newer.known, &pic),
               SPMD_ERR_INVALID_ARGUMENT, "built against a newer libspmd");
  assert_null(pic);

  spmd_string_free(expected);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
  spmd_runtime_destroy(rt);
}

static void older_device_info_gets_only_the_fields_it_knows(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  caller_buffer b;
  poison(&b);
  const size_t older = offsetof(spmd_device_info, platform_name);
  b.device.struct_size = older;
  assert_ok(spmd_runtime_device_info(rt, 2, &b.device));
  assert_int_equal(b.device.struct_size, older);
  assert_int_equal(b.device.id, 2);
  spmd_platform platform;
  assert_ok(spmd_runtime_platform(rt, &platform));
  assert_int_equal(b.device.platform, platform);
  for (size_t i = older; i < sizeof b.bytes; ++i)
    if (b.bytes[i] != 0xff) fail_msg("byte %zu past struct_size was written", i);
  spmd_runtime_destroy(rt);
}

static void newer_device_info_keeps_its_unknown_tail(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  caller_buffer b;
  poison(&b);
  b.device.struct_size = sizeof(spmd_device_info) + 16;
  assert_ok(spmd_runtime_device_info(rt, 3, &b.device));
  assert_int_equal(b.device.struct_size, sizeof(spmd_device_info) + 16);
  assert_int_equal(b.device.id, 3);
  spmd_platform platform;
  assert_ok(spmd_runtime_platform(rt, &platform));
  assert_string_equal(b.device.platform_name, platform == SPMD_PLATFORM_SIM    ? "sim"
                                              : platform == SPMD_PLATFORM_CUDA ? "cuda"
                                                                               : "cpu");
  assert_int_equal(b.device.local_index, 3);
  for (size_t i = sizeof(spmd_device_info); i < sizeof b.bytes; ++i)
    if (b.bytes[i] != 0xff) fail_msg("byte %zu of the caller's tail was written", i);

  /* Too small to hold even the id. */
  b.device.struct_size = sizeof(size_t);
  assert_fails(spmd_runtime_device_info(rt, 0, &b.device),
               SPMD_ERR_INVALID_ARGUMENT, "struct_size");
  spmd_runtime_destroy(rt);
}

static void shard_info_writes_the_fields_that_fit(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  const int64_t mesh_shape[] = {4};
  spmd_mesh *m = test_mesh(rt, 1, mesh_shape);
  spmd_sharding *s = test_sharding(m, "x");
  const int64_t shape[] = {8, 3};

  caller_buffer b;
  poison(&b);
  b.shard.struct_size = sizeof(spmd_shard_info) + 24;
  assert_ok(spmd_sharding_shard_info(s, 2, shape, 1, &b.shard));
  assert_int_equal(b.shard.struct_size, sizeof(spmd_shard_info) + 24);
  assert_int_equal(b.shard.device, 1);
  assert_int_equal(b.shard.ndim, 2);
  assert_int_equal(b.shard.start[0], 2);
  assert_int_equal(b.shard.stop[0], 4);
  assert_int_equal(b.shard.local_shape[1], 3);
  for (size_t i = sizeof(spmd_shard_info); i < sizeof b.bytes; ++i)
    if (b.bytes[i] != 0xff) fail_msg("byte %zu of the caller's tail was written", i);

  /* An older caller whose struct ends before local_shape gets the rest. */
  poison(&b);
  const size_t older = offsetof(spmd_shard_info, local_shape);
  b.shard.struct_size = older;
  assert_ok(spmd_sharding_shard_info(s, 2, shape, 1, &b.shard));
  assert_int_equal(b.shard.struct_size, older);
  assert_int_equal(b.shard.device, 1);
  assert_int_equal(b.shard.stop[0], 4);
  assert_int_equal(b.shard.stop[1], 3);
  assert_int_equal(b.shard.stop[2], 0);
  for (size_t i = older; i < sizeof b.bytes; ++i)
    if (b.bytes[i] != 0xff) fail_msg("byte %zu past struct_size was written", i);

  /* Too small to hold even the device. */
  poison(&b);
  b.shard.struct_size = sizeof(size_t);
  assert_fails(spmd_sharding_shard_info(s, 2, shape, 1, &b.shard),
               SPMD_ERR_INVALID_ARGUMENT, "is too small to hold any field");

  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
  spmd_runtime_destroy(rt);
}

/* shard_map callback: output 0 is input 0. */
static spmd_status identity(spmd_ctx *ctx, void *user_data) {
  (void)user_data;
  spmd_block b = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(ctx, 0, &b);
  if (st == SPMD_OK) st = spmd_ctx_set_output(ctx, 0, &b);
  return st;
}

static spmd_status run_identity(spmd_mesh *m, spmd_array *x,
                                const spmd_shard_map_options *o,
                                spmd_array **out) {
  const char *const spec[] = {"x"};
  return spmd_shard_map_text(m, identity, NULL, 1, &x, spec, 1, spec, o, out);
}

static void older_and_newer_shard_map_options(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  const int64_t mesh_shape[] = {4};
  spmd_mesh *m = test_mesh(rt, 1, mesh_shape);
  spmd_sharding *s = test_sharding(m, "x");
  const int64_t shape[] = {8};
  spmd_array *x = NULL;
  assert_ok(spmd_array_arange(s, SPMD_F32, 1, shape, 0.0, 1.0, &x));

  /* A caller that knew only check_rep: timeout_ms and the print sink are
   * poisoned bytes past struct_size (a negative timeout would be refused). */
  caller_buffer b;
  poison(&b);
  b.shard_map.struct_size = offsetof(spmd_shard_map_options, timeout_ms);
  b.shard_map.check_rep = 1;
  spmd_array *y = NULL;
  assert_ok(run_identity(m, x, &b.shard_map, &y));
  float got[8];
  assert_ok(spmd_array_to_host(y, got, sizeof got));
  assert_true(got[7] == 7.0f);
  spmd_array_destroy(y);

  struct {
    spmd_shard_map_options known;
    int64_t future;
  } newer;
  memset(&newer, 0, sizeof newer);
  newer.known.struct_size = sizeof newer;
  y = NULL;
  assert_ok(run_identity(m, x, &newer.known, &y));
  spmd_array_destroy(y);
  newer.future = -1;
  y = NULL;
  assert_fails(run_identity(m, x, &newer.known, &y), SPMD_ERR_INVALID_ARGUMENT,
               "built against a newer libspmd");
  assert_null(y);

  spmd_array_destroy(x);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
  spmd_runtime_destroy(rt);
}

static void older_and_newer_collective_options(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  const int64_t mesh_shape[] = {4};
  spmd_mesh *m = test_mesh(rt, 1, mesh_shape);
  spmd_sharding *s = test_sharding(m, "x");
  const int64_t shape[] = {8};

  /* A caller from before timeout_ms: the poisoned bytes would be a negative
   * timeout, refused, if they were read. */
  caller_buffer b;
  poison(&b);
  memset(&b.collective, 0, offsetof(spmd_collective_options, timeout_ms));
  b.collective.struct_size = offsetof(spmd_collective_options, timeout_ms);
  spmd_collective *c = NULL;
  assert_ok(spmd_collective_create(s, SPMD_COLLECTIVE_PSUM, "x", SPMD_F32, 1,
                                   shape, &b.collective, &c));
  spmd_collective_destroy(c);

  struct {
    spmd_collective_options known;
    uint32_t future[2];
  } newer;
  memset(&newer, 0, sizeof newer);
  newer.known.struct_size = sizeof newer;
  c = NULL;
  assert_ok(spmd_collective_create(s, SPMD_COLLECTIVE_PSUM, "x", SPMD_F32, 1,
                                   shape, &newer.known, &c));
  spmd_collective_destroy(c);
  newer.future[1] = 1;
  c = NULL;
  assert_fails(spmd_collective_create(s, SPMD_COLLECTIVE_PSUM, "x", SPMD_F32,
                                      1, shape, &newer.known, &c),
               SPMD_ERR_INVALID_ARGUMENT, "built against a newer libspmd");
  assert_null(c);

  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
  spmd_runtime_destroy(rt);
}

static spmd_status never_called(spmd_ctx *ctx, void *ud) {
  (void)ctx;
  (void)ud;
  return SPMD_ERR_INTERNAL;
}

/* A struct_size no struct can have (an uninitialised field) is refused
 * before anything is read or written past the caller's real struct. */
static void garbage_struct_sizes_are_refused_as_uninitialised(void **state) {
  (void)state;
  const size_t garbage[2] = {4096, SIZE_MAX};
  spmd_runtime *rt = test_runtime(2);
  const int64_t ms[1] = {2}, shape[1] = {2};
  spmd_mesh *m = test_mesh(rt, 1, ms);
  spmd_sharding *s = test_sharding(m, "x");
  for (int i = 0; i < 2; ++i) {
    spmd_runtime_options ro = SPMD_RUNTIME_OPTIONS_INIT;
    ro.struct_size = garbage[i];
    spmd_runtime *other = NULL;
    assert_fails(spmd_runtime_create(&ro, &other), SPMD_ERR_INVALID_ARGUMENT,
                 "options->struct_size");
    assert_non_null(strstr(spmd_last_error(), "looks uninitialised"));
    spmd_visualize_options vo = SPMD_VISUALIZE_OPTIONS_INIT;
    vo.struct_size = garbage[i];
    char *pic = NULL;
    assert_fails(spmd_sharding_visualize(s, 1, shape, &vo, &pic), SPMD_ERR_INVALID_ARGUMENT,
                 "looks uninitialised");
    spmd_collective_options co = SPMD_COLLECTIVE_OPTIONS_INIT;
    co.struct_size = garbage[i];
    spmd_collective *c = NULL;
    assert_fails(spmd_collective_create(s, SPMD_COLLECTIVE_PSUM, "x", SPMD_F32, 1, shape, &co, &c),
                 SPMD_ERR_INVALID_ARGUMENT, "looks uninitialised");
    spmd_shard_map_options so = SPMD_SHARD_MAP_OPTIONS_INIT;
    so.struct_size = garbage[i];
    assert_fails(spmd_shard_map_text(m, never_called, NULL, 0, NULL, NULL, 0, NULL, &so, NULL),
                 SPMD_ERR_INVALID_ARGUMENT, "looks uninitialised");
    spmd_device_info info = SPMD_DEVICE_INFO_INIT;
    info.struct_size = garbage[i];
    assert_fails(spmd_runtime_device_info(rt, 0, &info), SPMD_ERR_INVALID_ARGUMENT,
                 "looks uninitialised");
    spmd_shard_info sh;
    memset(&sh, 0, sizeof sh);
    sh.struct_size = garbage[i];
    assert_fails(spmd_sharding_shard_info(s, 1, shape, 0, &sh), SPMD_ERR_INVALID_ARGUMENT,
                 "looks uninitialised");
  }
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
  spmd_runtime_destroy(rt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(garbage_struct_sizes_are_refused_as_uninitialised),
      cmocka_unit_test(header_macros_match_the_project_version),
      cmocka_unit_test(loaded_library_reports_the_project_version),
      cmocka_unit_test(older_runtime_options_take_defaults_for_missing_fields),
      cmocka_unit_test(newer_runtime_options_with_unset_new_fields_are_accepted),
      cmocka_unit_test(newer_runtime_options_with_new_fields_set_are_rejected),
      cmocka_unit_test(options_without_struct_size_are_rejected),
      cmocka_unit_test(init_functions_write_the_init_macros_into_the_callers_size),
      cmocka_unit_test(older_visualize_options_take_defaults_for_missing_fields),
      cmocka_unit_test(older_device_info_gets_only_the_fields_it_knows),
      cmocka_unit_test(newer_device_info_keeps_its_unknown_tail),
      cmocka_unit_test(shard_info_writes_the_fields_that_fit),
      cmocka_unit_test(older_and_newer_shard_map_options),
      cmocka_unit_test(older_and_newer_collective_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
