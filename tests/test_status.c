/* Status codes, their names, and the thread-local last-error message. */
#include "spmd_test.h"

#include <pthread.h>

static void status_strings_name_every_code(void **state) {
  (void)state;
  assert_string_equal(spmd_status_string(SPMD_OK), "ok");
  assert_string_equal(spmd_status_string(SPMD_ERR_INVALID_ARGUMENT), "invalid argument");
  assert_string_equal(spmd_status_string(SPMD_ERR_OUT_OF_RANGE), "out of range");
  assert_string_equal(spmd_status_string(SPMD_ERR_OUT_OF_MEMORY), "out of memory");
  assert_string_equal(spmd_status_string(SPMD_ERR_UNSUPPORTED), "unsupported");
  assert_string_equal(spmd_status_string(SPMD_ERR_TIMEOUT), "timeout");
  assert_string_equal(spmd_status_string(SPMD_ERR_CALLBACK), "callback failed");
  assert_string_equal(spmd_status_string(SPMD_ERR_INTERNAL), "internal error");
  assert_string_equal(spmd_status_string((spmd_status)999), "unknown status");
}

static void last_error_names_function_and_argument(void **state) {
  (void)state;
  spmd_clear_error();
  assert_string_equal(spmd_last_error(), "");
  assert_int_equal(spmd_runtime_create(NULL, NULL), SPMD_ERR_INVALID_ARGUMENT);
  assert_string_equal(spmd_last_error(), "spmd_runtime_create: out: NULL output pointer");
  spmd_clear_error();
  assert_string_equal(spmd_last_error(), "");
}

static void *fail_in_thread(void *arg) {
  (void)arg;
  size_t n;
  spmd_mesh_ndim(NULL, &n);
  return NULL;
}

static void last_error_is_per_thread(void **state) {
  (void)state;
  spmd_clear_error();
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, fail_in_thread, NULL), 0);
  pthread_join(t, NULL);
  /* The other thread's failure does not show here. */
  assert_string_equal(spmd_last_error(), "");
}

static void version_matches_header(void **state) {
  (void)state;
  assert_int_equal(spmd_version(), SPMD_VERSION_NUMBER);
  assert_string_equal(spmd_version_string(), SPMD_VERSION_STRING);
}

static void dtype_sizes_and_names(void **state) {
  (void)state;
  assert_int_equal(spmd_dtype_size(SPMD_F32), 4);
  assert_int_equal(spmd_dtype_size(SPMD_F64), 8);
  assert_int_equal(spmd_dtype_size(SPMD_F16), 2);
  assert_int_equal(spmd_dtype_size(SPMD_BF16), 2);
  assert_int_equal(spmd_dtype_size(SPMD_I32), 4);
  assert_int_equal(spmd_dtype_size(SPMD_I64), 8);
  assert_int_equal(spmd_dtype_size(SPMD_U8), 1);
  assert_int_equal(spmd_dtype_size(SPMD_BOOL), 1);
  assert_int_equal(spmd_dtype_size(SPMD_DTYPE_INVALID), 0);
  assert_string_equal(spmd_dtype_name(SPMD_BF16), "bfloat16");
  assert_string_equal(spmd_dtype_name(SPMD_BOOL), "bool");
  assert_null(spmd_dtype_name((spmd_dtype)42));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(status_strings_name_every_code),
      cmocka_unit_test(last_error_names_function_and_argument),
      cmocka_unit_test(last_error_is_per_thread),
      cmocka_unit_test(version_matches_header),
      cmocka_unit_test(dtype_sizes_and_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
