/**
 * @file
 * libspmd: the handles a process holds, for leak checks.
 */
#ifndef SPMD_HANDLES_H
#define SPMD_HANDLES_H

#include <stddef.h>

#include "spmd/export.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/**
 * Number of handles live in this process: made by libspmd and not yet
 * destroyed, of every kind (runtimes, meshes, specs, shardings, arrays,
 * collectives, and the contexts of callbacks running now).
 *
 * Meant for tests and language bindings: the count before and after a
 * piece of work tells whether that work left a handle behind. Handles made
 * by other threads meanwhile count too. Thread-safe.
 *
 * @param out Receives the count; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL out.
 */
SPMD_API spmd_status spmd_live_handles(size_t *out);

SPMD_EXTERN_C_END

#endif /* SPMD_HANDLES_H */
