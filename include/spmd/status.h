/* libspmd: status codes and the thread-local description of the last error. */
#ifndef SPMD_STATUS_H
#define SPMD_STATUS_H

#include "spmd/export.h"

SPMD_EXTERN_C_BEGIN

/* Every fallible call returns one of these. Outputs are written only on
 * SPMD_OK; on any other code they are left untouched. */
typedef enum spmd_status {
  SPMD_OK = 0,
  SPMD_ERR_INVALID_ARGUMENT = 1, /* a bad value, NULL, or a destroyed handle  */
  SPMD_ERR_OUT_OF_RANGE = 2,     /* an index past the end (shard, device)     */
  SPMD_ERR_OUT_OF_MEMORY = 3,    /* an allocation failed                      */
  SPMD_ERR_UNSUPPORTED = 4,      /* valid, but not built in or not available  */
  SPMD_ERR_TIMEOUT = 5,          /* a peer never reached a collective         */
  SPMD_ERR_CALLBACK = 6,         /* a user callback reported failure          */
  SPMD_ERR_INTERNAL = 7          /* a bug in libspmd; please report it        */
} spmd_status;

/* A static, human-readable name for a status code ("invalid argument").
 * Never NULL; unknown codes give "unknown status". Thread-safe. */
SPMD_API const char *spmd_status_string(spmd_status status);

/* The message of the last failed call on this thread, naming the argument
 * and the problem ("spec 'data, modle': mesh has no axis 'modle' (axes:
 * data, model)"). "" when no call has failed yet. The pointer is valid until
 * the next libspmd call on the same thread. */
SPMD_API const char *spmd_last_error(void);

/* Forgets the last error of this thread, so spmd_last_error() returns "". */
SPMD_API void spmd_clear_error(void);

/* Strings returned by libspmd (to_string, visualize) are owned by the caller
 * and released with this. NULL is accepted. */
SPMD_API void spmd_string_free(char *string);

SPMD_EXTERN_C_END

#endif /* SPMD_STATUS_H */
