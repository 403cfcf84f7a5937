/* The seed programs' error messages; see seed_error.h. */
#include "seed_error.h"

#include <stdarg.h>
#include <stdio.h>

#if defined(_MSC_VER)
#define SEED_THREAD_LOCAL __declspec(thread)
#else
#define SEED_THREAD_LOCAL __thread
#endif

static SEED_THREAD_LOCAL char last_error[1024];

const char *seed_last_error(void) { return last_error; }

const char *seed_or_spmd_last_error(void) {
  return last_error[0] ? last_error : spmd_last_error();
}

spmd_status seed_fail(spmd_status status, const char *function, const char *fmt, ...) {
  int used = snprintf(last_error, sizeof last_error, "%s: ", function);
  if (used < 0) used = 0;
  if ((size_t)used < sizeof last_error) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error + used, sizeof last_error - (size_t)used, fmt, ap);
    va_end(ap);
  }
  return status;
}

spmd_status seed_lib_fail(spmd_status status, const char *function, const char *doing) {
  return seed_fail(status, function, "%s: %s", doing, spmd_last_error());
}
