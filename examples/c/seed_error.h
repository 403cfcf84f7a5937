/* Error messages of the seed programs (seed_layer, seed_train): like
 * spmd_last_error, a thread-local message saying why the last failing call
 * failed, with libspmd's own message included when a libspmd call was the
 * cause. */
#ifndef SPMD_SEED_ERROR_H
#define SPMD_SEED_ERROR_H

#include <spmd/spmd.h>

/* Why the last failing seed_* call on this thread failed ("seed_trainer_step:
 * batch of 12 rows: must be a positive multiple of the 8 devices along
 * 'x'"); "" before any failure. Valid until the next failing call. */
const char *seed_last_error(void);

/* For programs that stop at their first failure: seed_last_error() when a
 * seed call has failed on this thread, else spmd_last_error(). */
const char *seed_or_spmd_last_error(void);

/* Records "function: message" and returns status. */
spmd_status seed_fail(spmd_status status, const char *function, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* A libspmd call failed: records its message (spmd_last_error), prefixed
 * with the seed function and what it was doing, and returns status. */
spmd_status seed_lib_fail(spmd_status status, const char *function, const char *doing);

#endif /* SPMD_SEED_ERROR_H */
