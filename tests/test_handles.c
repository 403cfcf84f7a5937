/* Handles are ids the library hands out once: a destroyed handle stays
 * dead even when a new object takes its place in memory, a shard_map
 * context dies with its run, and a call refused for a NULL output makes no
 * handle that could keep a runtime (and its threads) alive. */
#define _DEFAULT_SOURCE
#include "spmd_test.h"

#include <dirent.h>
#include <stdlib.h>
#include <time.h>

/* Threads of this process, from /proc (Linux). */
static int thread_count(void) {
  DIR *d = opendir("/proc/self/task");
  if (d == NULL) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

/* The thread count once it is `want`, or what it is after two seconds: a
 * joined thread can stay listed in /proc for a moment after the join
 * returns (longer under the sanitizers), so a count taken at once may be
 * one too many though every thread has ended. */
static int thread_count_settled(int want) {
  int n = thread_count();
  for (int i = 0; i < 200 && n != want; ++i) {
    const struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
    n = thread_count();
  }
  return n;
}

static spmd_runtime *runtime_with_threads(void) {
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.cpu_device_count = 4;
  o.devices_per_gpu = 4;
  o.worker_threads = 3; /* two threads of its own, whatever the machine */
  spmd_runtime *rt = NULL;
  assert_ok(spmd_runtime_create(&o, &rt));
  return rt;
}

static void a_destroyed_handle_never_resolves_to_a_new_object(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  const int64_t s[1] = {4};
  spmd_mesh *old = test_mesh(rt, 1, s);
  spmd_mesh_destroy(old);
  /* Make many meshes: with handles that were addresses, one would land on
   * the old one's and the stale handle would name it. */
  for (int i = 0; i < 2000; ++i) {
    spmd_mesh *m = test_mesh(rt, 1, s);
    assert_true(m != old);
    char *text = NULL;
    assert_fails(spmd_mesh_to_string(old, &text), SPMD_ERR_INVALID_ARGUMENT,
                 "mesh: not a live spmd_mesh");
    assert_null(text);
    spmd_mesh_destroy(m);
  }
  spmd_mesh_destroy(old); /* destroying twice is harmless */
  spmd_runtime_destroy(rt);
}

static void a_handle_of_another_kind_is_refused(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  size_t ndim;
  assert_fails(spmd_mesh_ndim((const spmd_mesh *)rt, &ndim), SPMD_ERR_INVALID_ARGUMENT,
               "not a live spmd_mesh");
  int local = 0;
  assert_fails(spmd_mesh_ndim((const spmd_mesh *)&local, &ndim), SPMD_ERR_INVALID_ARGUMENT,
               "not a live spmd_mesh");
  spmd_runtime_destroy(rt);
}

/* Device 0's context, kept past its run. */
static spmd_status keep_ctx(spmd_ctx *ctx, void *ud) {
  int dev = -1;
  spmd_status st = spmd_ctx_device_id(ctx, &dev);
  if (st == SPMD_OK && dev == 0) *(spmd_ctx **)ud = ctx;
  return st;
}

static void a_context_used_after_its_run_is_refused(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(2);
  const int64_t s[1] = {2};
  spmd_mesh *mesh = test_mesh(rt, 1, s);
  spmd_ctx *kept = NULL;
  assert_ok(spmd_shard_map_text(mesh, keep_ctx, &kept, 0, NULL, NULL, 0, NULL, NULL, NULL));
  assert_non_null(kept);
  int dev = -1;
  assert_fails(spmd_ctx_device_id(kept, &dev), SPMD_ERR_INVALID_ARGUMENT,
               "ctx: not a live shard_map context");
  assert_int_equal(dev, -1);
  /* A later run's contexts are other handles. */
  spmd_ctx *later = NULL;
  assert_ok(spmd_shard_map_text(mesh, keep_ctx, &later, 0, NULL, NULL, 0, NULL, NULL, NULL));
  assert_true(later != kept);
  assert_fails(spmd_ctx_device_id(kept, &dev), SPMD_ERR_INVALID_ARGUMENT, "not a live");
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

static size_t live_handles(void);

/* Each call is refused for its NULL output; had it made its handle first,
 * the handle would keep the runtime alive, and its threads with it. On cuda
 * the runtime has no worker threads and the driver's outlive it, so there
 * the live handles alone tell. */
static void calls_refused_for_a_null_output_leave_nothing_alive(void **state) {
  (void)state;
  const int count_threads = !test_platform_is("cuda");
  const size_t handles_before = live_handles();
  const int before = thread_count();
  assert_true(before > 0);
  spmd_runtime *rt = runtime_with_threads();
  if (count_threads) assert_true(thread_count() > before);
  const int64_t s[1] = {4}, shape[1] = {8};
  spmd_mesh *mesh = test_mesh(rt, 1, s);
  spmd_sharding *sh = test_sharding(mesh, "x");
  spmd_array *a = NULL;
  assert_ok(spmd_array_zeros(sh, SPMD_F32, 1, shape, &a));
  spmd_collective *c = NULL;
  assert_ok(spmd_collective_create(sh, SPMD_COLLECTIVE_PSUM, "x", SPMD_F32, 1, shape, NULL, &c));

  assert_fails(spmd_spec_create(NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
  assert_fails(spmd_sharding_mesh(sh, NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
  assert_fails(spmd_sharding_spec(sh, NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
  assert_fails(spmd_array_sharding(a, NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
  assert_fails(spmd_collective_output_sharding(c, NULL), SPMD_ERR_INVALID_ARGUMENT,
               "out: NULL");
  assert_fails(spmd_mesh_to_string(mesh, NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
  assert_fails(spmd_sharding_to_string(sh, NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
  spmd_spec *spec = NULL;
  assert_ok(spmd_spec_parse("x", &spec));
  assert_fails(spmd_spec_to_string(spec, NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
  spmd_spec_destroy(spec);

  spmd_collective_destroy(c);
  spmd_array_destroy(a);
  spmd_sharding_destroy(sh);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
  /* Every handle is gone, so the runtime is, and its threads with it. */
  assert_int_equal(live_handles(), handles_before);
  if (count_threads) assert_int_equal(thread_count_settled(before), before);
}

static size_t live_handles(void) {
  size_t n = 0;
  assert_ok(spmd_live_handles(&n));
  return n;
}

/* The live-handle count rises by one per handle made, falls with each
 * destroy, counts a context only while its callback runs, and is back
 * where it started once everything is released. */
static spmd_status count_during_callback(spmd_ctx *ctx, void *user_data) {
  size_t *seen = user_data;
  int device = 0;
  spmd_ctx_device_id(ctx, &device);
  if (device == 0) spmd_live_handles(seen);
  return SPMD_OK;
}

static void the_live_handle_count_follows_makes_and_destroys(void **state) {
  (void)state;
  const size_t before = live_handles();
  spmd_runtime *rt = test_runtime(4);
  assert_int_equal(live_handles(), before + 1);
  const int64_t s[1] = {4}, shape[1] = {8};
  spmd_mesh *mesh = test_mesh(rt, 1, s);
  spmd_sharding *sh = test_sharding(mesh, "x");
  spmd_array *a = NULL;
  assert_ok(spmd_array_zeros(sh, SPMD_F32, 1, shape, &a));
  assert_int_equal(live_handles(), before + 4);
  /* A refused call makes nothing. */
  assert_fails(spmd_sharding_named_text(mesh, "P('nope')", &sh), SPMD_ERR_INVALID_ARGUMENT,
               "nope");
  assert_int_equal(live_handles(), before + 4);

  /* Four contexts exist while the callbacks run (device 0 may look before
   * the others have started, so at least one), none after. */
  size_t seen = 0;
  const char *in_specs[1] = {"x"};
  assert_ok(spmd_shard_map_text(mesh, count_during_callback, &seen, 1, &a, in_specs, 0, NULL,
                                NULL, NULL));
  assert_true(seen >= before + 5 && seen <= before + 8);
  assert_int_equal(live_handles(), before + 4);

  spmd_array_destroy(a);
  spmd_array_destroy(a); /* twice: harmless, counted once */
  spmd_sharding_destroy(sh);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
  assert_int_equal(live_handles(), before);
  assert_fails(spmd_live_handles(NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_destroyed_handle_never_resolves_to_a_new_object),
      cmocka_unit_test(a_handle_of_another_kind_is_refused),
      cmocka_unit_test(a_context_used_after_its_run_is_refused),
      cmocka_unit_test(calls_refused_for_a_null_output_leave_nothing_alive),
      cmocka_unit_test(the_live_handle_count_follows_makes_and_destroys),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
