/* Assertions for the seed programs' tests: a status plus the message
 * seed_last_error() gives (examples/c/seed_error.h). */
#ifndef SPMD_TESTS_SEED_ASSERT_H
#define SPMD_TESTS_SEED_ASSERT_H

#include "seed_error.h"
#include "spmd_test.h"

#define assert_seed_fails(call, code, needle)                                         \
  do {                                                                                \
    spmd_status st_ = (call);                                                         \
    if (st_ != (code))                                                                \
      fail_msg("%s -> %s (expected %s): %s", #call, spmd_status_string(st_),          \
               spmd_status_string(code), seed_last_error());                          \
    if (strstr(seed_last_error(), (needle)) == NULL)                                  \
      fail_msg("%s: message \"%s\" lacks \"%s\"", #call, seed_last_error(),           \
               (needle));                                                             \
  } while (0)

#define assert_seed_ok(call)                                                          \
  do {                                                                                \
    spmd_status st_ = (call);                                                         \
    if (st_ != SPMD_OK)                                                               \
      fail_msg("%s -> %s: %s", #call, spmd_status_string(st_), seed_last_error());    \
  } while (0)

#endif /* SPMD_TESTS_SEED_ASSERT_H */
