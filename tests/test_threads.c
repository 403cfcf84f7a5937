/* When the system refuses a thread, the call that needed it fails cleanly
 * (SPMD_ERR_OUT_OF_MEMORY naming what could not start), no thread that did
 * start is left running or holding work, and the runtime stays usable.
 * The suite stands in for the system: its pthread_create can be told to
 * refuse after a number of successes. */
#define _GNU_SOURCE
#include "spmd_test.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

static int allowed = -1; /* thread starts that still succeed; -1: all */

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                   void *arg) {
  typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  static create_fn real = NULL;
  if (real == NULL) {
    void *sym = dlsym(RTLD_NEXT, "pthread_create");
    memcpy(&real, &sym, sizeof real);
  }
  if (__atomic_load_n(&allowed, __ATOMIC_SEQ_CST) >= 0 &&
      __atomic_fetch_sub(&allowed, 1, __ATOMIC_SEQ_CST) <= 0)
    return EAGAIN;
  return real(thread, attr, fn, arg);
}

static void refuse_after(int n) { __atomic_store_n(&allowed, n, __ATOMIC_SEQ_CST); }
static void allow_all(void) { __atomic_store_n(&allowed, -1, __ATOMIC_SEQ_CST); }

static spmd_status psum_one(spmd_ctx *ctx, void *ud) {
  (void)ud;
  const int64_t shape[1] = {2};
  spmd_block x = SPMD_BLOCK_INIT, y = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_alloc(ctx, SPMD_F32, 1, shape, &x);
  if (st) return st;
  return spmd_ctx_psum(ctx, &x, "x", &y);
}

/* clang's ThreadSanitizer runtime is linked into the program and does not
 * let a replacement pthread_create reach it (GCC's shared one does): the
 * refusals are tested in the other builds. */
#if defined(__clang__) && defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSAN 1
#endif
#endif
#ifndef TSAN
#define TSAN 0
#endif
#define SKIP_UNDER_TSAN() \
  do {                     \
    if (TSAN) skip();      \
  } while (0)

static void too_many_worker_threads_are_refused_up_front(void **state) {
  (void)state;
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_CPU;
  o.worker_threads = 100000;
  spmd_runtime *rt = NULL;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "options->worker_threads: 100000 is more than the 1024");
  assert_null(rt);
}

static void a_refused_worker_thread_fails_the_runtime_cleanly(void **state) {
  (void)state;
  SKIP_UNDER_TSAN();
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_CPU;
  o.cpu_device_count = 2;
  o.devices_per_gpu = 2;
  o.worker_threads = 4;
  spmd_runtime *rt = NULL;
  refuse_after(1);
  spmd_clear_error();
  const spmd_status st = spmd_runtime_create(&o, &rt);
  allow_all();
  assert_int_equal(st, SPMD_ERR_OUT_OF_MEMORY);
  assert_non_null(strstr(spmd_last_error(),
                         "worker_threads: the system refused to start worker thread 3 of 4"));
  assert_null(rt);
  assert_ok(spmd_runtime_create(&o, &rt));
  spmd_runtime_destroy(rt);
}

static void a_refused_sim_queue_thread_fails_the_runtime_cleanly(void **state) {
  (void)state;
  SKIP_UNDER_TSAN();
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_SIM;
  o.cpu_device_count = 4;
  o.devices_per_gpu = 4;
  spmd_runtime *rt = NULL;
  refuse_after(2);
  spmd_clear_error();
  const spmd_status st = spmd_runtime_create(&o, &rt);
  allow_all();
  assert_int_equal(st, SPMD_ERR_OUT_OF_MEMORY);
  assert_non_null(strstr(spmd_last_error(), "refused to start the queue thread of device 2"));
  assert_null(rt);
  assert_ok(spmd_runtime_create(&o, &rt));
  spmd_runtime_destroy(rt);
}

static void a_refused_device_thread_fails_the_shard_map_and_not_the_runtime(void **state) {
  (void)state;
  SKIP_UNDER_TSAN();
  skip_on_platform("cuda", "the CUDA driver and NCCL start threads of their own inside a run, "
                           "which the refusals would hit before the runtime's");
  spmd_runtime *rt = test_runtime(4); /* device threads start on first use */
  const int64_t s[1] = {4};
  spmd_mesh *mesh = test_mesh(rt, 1, s);
  for (int refused_at = 0; refused_at < 4; ++refused_at) {
    refuse_after(refused_at);
    spmd_clear_error();
    const spmd_status st =
        spmd_shard_map_text(mesh, psum_one, NULL, 0, NULL, NULL, 0, NULL, NULL, NULL);
    allow_all();
    if (st == SPMD_OK) break; /* every thread had started in an earlier round */
    assert_int_equal(st, SPMD_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(spmd_last_error(), "refused to start the thread of device"));
  }
  /* Every device can run now, and runs every time. */
  for (int i = 0; i < 3; ++i)
    assert_ok(spmd_shard_map_text(mesh, psum_one, NULL, 0, NULL, NULL, 0, NULL, NULL, NULL));
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(too_many_worker_threads_are_refused_up_front),
      cmocka_unit_test(a_refused_worker_thread_fails_the_runtime_cleanly),
      cmocka_unit_test(a_refused_sim_queue_thread_fails_the_runtime_cleanly),
      cmocka_unit_test(a_refused_device_thread_fails_the_shard_map_and_not_the_runtime),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
