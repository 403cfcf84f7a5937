/**
 * @file
 * libspmd: JAX's SPMD sharding model for C. The umbrella header.
 *
 * Conventions every header keeps:
 *
 * Errors. Every fallible call returns spmd_status; results come out through
 * the last pointer arguments, which are checked before anything is made and
 * left untouched on failure (the calls that fill a caller's array, such as
 * spmd_array_shape, write the count even then). spmd_last_error() gives the
 * thread's message for its last failure, naming the function and the
 * argument. A NULL, destroyed or wrong-kind handle, and a NULL output
 * pointer, are SPMD_ERR_INVALID_ARGUMENT. Besides the statuses each
 * function names, any call that returns a spmd_status may fail with
 * SPMD_ERR_OUT_OF_MEMORY when an allocation fails and SPMD_ERR_INTERNAL on
 * a bug in libspmd.
 *
 * Ownership. Handles the caller receives it destroys with their _destroy
 * (NULL accepted, destroying twice harmless); strings it receives it frees
 * with spmd_string_free. Borrowed handles and pointers (inside a shard_map
 * callback, names a mesh lends) say so where they are returned.
 *
 * Thread safety. Unless a function says otherwise, every function may be
 * called from any thread, at the same time as any other, on the same
 * handles or different ones: handles are immutable once made, and work on
 * one runtime is ordered internally. The caller orders only two things:
 * a handle is not destroyed while another thread still uses it, and an
 * array is not written (spmd_array_shard_write, a persistent collective's
 * execute_into output) while another thread reads or writes it. Donating
 * an array to an op (spmd_op_options.donate) adds no rule: calls on other
 * threads that started before the op finish with the array's old values,
 * and those that start after it fail with SPMD_ERR_INVALID_ARGUMENT
 * naming the op; destroying its handle falls under the first rule.
 * The exceptions, stated where they are declared: a spec is not read while
 * spmd_spec_append grows it; a shard_map context is used only on its
 * callback's thread; shard_maps of one runtime run one after another;
 * executions of one persistent collective run one after another.
 *
 * Structs that start with struct_size grow by appending; fill them with
 * their _INIT macro or their _init(ptr, sizeof *ptr) function.
 */
#ifndef SPMD_SPMD_H
#define SPMD_SPMD_H

#include "spmd/export.h"
#include "spmd/version.h"
#include "spmd/status.h"
#include "spmd/handles.h"
#include "spmd/dtype.h"
#include "spmd/runtime.h"
#include "spmd/mesh.h"
#include "spmd/spec.h"
#include "spmd/sharding.h"
#include "spmd/array.h"
#include "spmd/format.h"
#include "spmd/random.h"
#include "spmd/visualize.h"
#include "spmd/shard_map.h"
#include "spmd/collective.h"
#include "spmd/ops.h"

#endif /* SPMD_SPMD_H */
