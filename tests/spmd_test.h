/* Helpers shared by the CMocka suites. Include after <cmocka.h>'s own
 * prerequisites; this header includes them. */
#ifndef SPMD_TEST_H
#define SPMD_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Whether the platform under test, $SPMD_PLATFORM (cpu when unset), is `name`. */
static inline int test_platform_is(const char *name) {
  const char *p = getenv("SPMD_PLATFORM");
  return strcmp(p != NULL && *p != '\0' ? p : "cpu", name) == 0;
}

/* Skips the running test, saying why, when the platform under test is
 * `platform` (a check that cannot apply there must not pass silently). */
#define skip_on_platform(platform, why)                                     \
  do {                                                                      \
    if (test_platform_is(platform)) {                                       \
      print_message("skipped on %s: %s\n", (platform), (why));              \
      skip();                                                               \
    }                                                                       \
  } while (0)

/* Texts that name devices in JAX's words for the platform under test. On
 * cuda, devices print as CudaDevice(id=N) and pictures label them "GPU N",
 * as JAX does on GPUs, while the expected texts (and JAX's references) were
 * made on CPUs: there, and only there, this maps the former to CpuDevice(
 * and "CPU N" in s, in place ("GPU"/"CPU" have the same width, so pictures
 * stay aligned), and changes nothing else. Returns s. */
static inline char *test_platform_text(char *s) {
  if (s == NULL || !test_platform_is("cuda")) return s;
  for (char *p = s; (p = strstr(p, "CudaDevice(")) != NULL; p += 3) {
    memcpy(p, "Cpu", 3);
    memmove(p + 3, p + 4, strlen(p + 4) + 1);
  }
  for (char *p = s; (p = strstr(p, "GPU ")) != NULL; p += 4) memcpy(p, "CPU", 3);
  /* A label cut short to fit its cell: "G…", "GP…", "GPU…". */
  for (char *p = s; (p = strstr(p, "\xe2\x80\xa6")) != NULL; p += 3)
    for (size_t k = 1; k <= 3 && p - k >= s; ++k)
      if (strncmp(p - k, "GPU", k) == 0 && (p - k == s || p[-(ptrdiff_t)k - 1] == ' ')) {
        p[-(ptrdiff_t)k] = 'C';
        break;
      }
  return s;
}

/* Asserts a returned string equals `expected` (device names as the cpu
 * platform prints them: test_platform_text) and frees it. */
#define assert_string_result(str, expected)                                 \
  do {                                                                      \
    char *s_ = test_platform_text(str);                                     \
    if (strcmp(s_, (expected)) != 0)                                        \
      fail_msg("got:\n%s\nexpected:\n%s", s_, (expected));                  \
    spmd_string_free(s_);                                                   \
  } while (0)

/* A runtime of the platform under test: SPMD_PLATFORM=cpu|sim|cuda picks it
 * (cpu when unset), so the suites written once run against every backend.
 * On cuda the `devices` are logical devices of each GPU, so an N-device
 * test gets N devices on a one-GPU machine. */
static inline spmd_runtime *test_runtime(int devices) {
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_DEFAULT;
  o.cpu_device_count = devices;
  o.devices_per_gpu = devices;
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
