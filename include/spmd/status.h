/**
 * @file
 * libspmd: status codes and the thread-local description of the last error.
 */
#ifndef SPMD_STATUS_H
#define SPMD_STATUS_H

#include "spmd/export.h"

SPMD_EXTERN_C_BEGIN

/**
 * The result of every fallible call.
 *
 * Outputs are written only on SPMD_OK; on any other code they are left
 * untouched (but for the count of the calls that fill a caller's array),
 * and spmd_last_error() describes the failure. Values are stable across
 * releases.
 */
typedef enum spmd_status {
  SPMD_OK = 0,                   /**< success                                  */
  SPMD_ERR_INVALID_ARGUMENT = 1, /**< a bad value, NULL, or a destroyed handle  */
  SPMD_ERR_OUT_OF_RANGE = 2,     /**< an index past the end (shard, device)     */
  SPMD_ERR_OUT_OF_MEMORY = 3,    /**< an allocation failed                      */
  SPMD_ERR_UNSUPPORTED = 4,      /**< valid, but not built in or not available  */
  SPMD_ERR_TIMEOUT = 5,          /**< a peer never reached a collective         */
  SPMD_ERR_CALLBACK = 6,         /**< a user callback reported failure          */
  SPMD_ERR_INTERNAL = 7          /**< a bug in libspmd; please report it        */
} spmd_status;

/**
 * A static, human-readable name for a status code ("invalid argument").
 *
 * Thread-safe.
 *
 * @param status The code to name; any value is accepted.
 * @return A static string, never NULL; "unknown status" for a value that is
 *         not a spmd_status.
 */
SPMD_API const char *spmd_status_string(spmd_status status);

/**
 * The message of the last failed call on this thread.
 *
 * The message names the function, the argument and the problem ("spec
 * 'data, modle': mesh has no axis 'modle' (axes: data, model)").
 *
 * @return The message, "" when no call has failed yet. It belongs to
 *         libspmd and is valid until the next libspmd call on the same
 *         thread.
 */
SPMD_API const char *spmd_last_error(void);

/**
 * Forgets the last error of this thread, so spmd_last_error() returns "".
 */
SPMD_API void spmd_clear_error(void);

/**
 * Releases a string returned by libspmd.
 *
 * Strings returned by libspmd (to_string, repr, visualize) are owned by the
 * caller and released with this.
 *
 * @param string The string to free; NULL is accepted.
 */
SPMD_API void spmd_string_free(char *string);

SPMD_EXTERN_C_END

#endif /* SPMD_STATUS_H */
