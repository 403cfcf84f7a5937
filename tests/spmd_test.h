/* Helpers shared by the CMocka suites. Include after <cmocka.h>'s own
 * prerequisites; this header includes them. */
#ifndef SPMD_TEST_H
#define SPMD_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "spmd/spmd.h"

/* Asserts a call succeeded, printing libspmd's message when it did not. */
#define assert_ok(call)                                                     \
  do {                                                                      \
    spmd_status st_ = (call);                                               \
    if (st_ != SPMD_OK)                                                     \
      fail_msg("%s -> %s: %s", #call, spmd_status_string(st_),              \
               spmd_last_error());                                          \
  } while (0)

/* Asserts a call failed with `code` and a message containing `needle`. */
#define assert_fails(call, code, needle)                                    \
  do {                                                                      \
    spmd_clear_error();                                                     \
    spmd_status st_ = (call);                                               \
    if (st_ != (code))                                                      \
      fail_msg("%s -> %s (expected %s): %s", #call,                         \
               spmd_status_string(st_), spmd_status_string(code),           \
               spmd_last_error());                                          \
    if (strstr(spmd_last_error(), (needle)) == NULL)                        \
      fail_msg("%s: message \"%s\" lacks \"%s\"", #call, spmd_last_error(), \
               (needle));                                                   \
  } while (0)

/* Asserts a returned string equals `expected` and frees it. */
#define assert_string_result(str, expected)                                 \
  do {                                                                      \
    char *s_ = (str);                                                       \
    if (strcmp(s_, (expected)) != 0)                                        \
      fail_msg("got:\n%s\nexpected:\n%s", s_, (expected));                  \
    spmd_string_free(s_);                                                   \
  } while (0)

/* A runtime of the platform under test: SPMD_PLATFORM=cpu|cuda picks it (cpu
 * when unset), so the suites written once run against every backend. */
static inline spmd_runtime *test_runtime(int devices) {
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_DEFAULT;
  o.cpu_device_count = devices;
  spmd_runtime *rt = NULL;
  assert_ok(spmd_runtime_create(&o, &rt));
  return rt;
}

/* A mesh "x" or "x,y" or "x,y,z" of the given sizes, devices in order. */
static inline spmd_mesh *test_mesh(spmd_runtime *rt, size_t ndim,
                                   const int64_t *shape) {
  static const char *const names[] = {"x", "y", "z"};
  spmd_mesh *m = NULL;
  assert_ok(spmd_mesh_create(rt, ndim, shape, names, NULL, &m));
  return m;
}

static inline spmd_sharding *test_sharding(spmd_mesh *mesh, const char *spec) {
  spmd_sharding *s = NULL;
  assert_ok(spmd_sharding_named_text(mesh, spec, &s));
  return s;
}

/* device_put of a row-major host buffer with NamedSharding(mesh, spec). */
static inline spmd_array *test_put(spmd_mesh *mesh, const char *spec, spmd_dtype dtype,
                                   size_t ndim, const int64_t *shape, const void *data) {
  spmd_sharding *s = test_sharding(mesh, spec);
  int64_t n = 1;
  for (size_t i = 0; i < ndim; ++i) n *= shape[i];
  spmd_array *a = NULL;
  assert_ok(spmd_array_from_host(s, dtype, ndim, shape, data,
                                 (size_t)n * spmd_dtype_size(dtype), &a));
  spmd_sharding_destroy(s);
  return a;
}

/* One runtime of 8 CPU devices for a whole suite: pass suite_setup and
 * suite_teardown to cmocka_run_group_tests. */
static spmd_runtime *suite_rt;

static inline int suite_setup(void **state) {
  (void)state;
  suite_rt = test_runtime(8);
  return 0;
}

static inline int suite_teardown(void **state) {
  (void)state;
  spmd_runtime_destroy(suite_rt);
  return 0;
}

#endif /* SPMD_TEST_H */
