/**
 * @file
 * libspmd: programs, recorded once and run many times (jax.jit).
 *
 * Experimental (spmd/experimental/experimental.h): define SPMD_EXPERIMENTAL
 * before including, and expect the functions to change in any release.
 *
 * A program is recorded with the ops of spmd/ops.h themselves. Its inputs
 * are arrays with a shape, dtype and sharding but no values (abstract
 * arrays, as jax.jit's tracers): an op given one records itself into that
 * program and returns another. Each recorded op is checked and placed as
 * the eager op would be, so a mistake is reported by the call that makes
 * it, and a program of one op gives the eager op's result. Arrays with
 * values named by a recorded op are kept as constants of the program. A
 * value donated to a recorded op (options->donate) is consumed as an eager
 * operand is, while the plan decides which buffers are reused: code
 * written for eager arrays, donations included, records unchanged.
 *
 * @code
 *   spmd_x_program *p;
 *   spmd_array *x, *s, *y, *z;
 *   spmd_x_program_create(rt, &p);
 *   spmd_x_program_input(p, sharding, SPMD_F32, 2, shape, &x);
 *   spmd_unary(SPMD_UNARY_SIN, x, NULL, &s);                 // records
 *   spmd_binary_scalar(SPMD_BINARY_MUL, s, 2.0, NULL, &y);
 *   spmd_binary_scalar(SPMD_BINARY_ADD, y, 1.0, NULL, &z);
 *   spmd_x_program_output(p, z, NULL);
 *   spmd_x_program_compile(p);          // sin, mul, add: one pass
 *   spmd_x_program_run(p, 1, &input, 1, &result);  // as often as needed
 * @endcode
 *
 * The values (x, s, y, z) are spmd_array handles: destroy them with
 * spmd_array_destroy when done recording. They answer spmd_array_shape,
 * _dtype, _sharding and the other calls about type and layout; calls that
 * need values (spmd_array_to_host, spmd_array_shard_read, ...) refuse them
 * with SPMD_ERR_INVALID_ARGUMENT. spmd_array_reshard of a value records a
 * layout constraint (jax.lax.with_sharding_constraint), and spmd_shard_map
 * of values records a step whose body runs at every run (its collectives
 * and the ops inside it included; see spmd/shard_map.h).
 *
 * Compiling places the program as a whole, as jax.jit does: a value is
 * also laid out for the constraints and uses after it (an op followed by a
 * constraint may be computed in a layout derived from it), which the
 * outputs' layouts and spmd_x_program_text show; the recorded handles keep
 * the layouts recording gave them. Then it plans the run once: chains of
 * elementwise ops over one shape and layout whose intermediate results
 * nothing else reads run as one pass per shard, with no intermediate
 * arrays; every value is let go after its last use, and a donated
 * input's buffers may take the result of the op that reads it last. Not
 * yet: random numbers inside a program.
 *
 * Thread-safety: recording a program is not thread-safe (one thread
 * records it); a compiled program may run on several threads at once.
 */
#ifndef SPMD_EXPERIMENTAL_PROGRAM_H
#define SPMD_EXPERIMENTAL_PROGRAM_H

#include "spmd/experimental/experimental.h"

SPMD_EXTERN_C_BEGIN

/** A program being recorded, or compiled and ready to run. */
typedef struct spmd_x_program spmd_x_program;

/**
 * Starts recording a program on the runtime's devices.
 *
 * @param runtime The runtime; not NULL. The program keeps it alive.
 * @param out Receives the program; not NULL.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or dead argument.
 */
SPMD_API spmd_status spmd_x_program_create(spmd_runtime *runtime, spmd_x_program **out);

/**
 * Destroys a program. Values recorded into it stay valid handles (destroy
 * them with spmd_array_destroy), but ops on them fail from then on.
 *
 * @param program The program; NULL is accepted.
 */
SPMD_API void spmd_x_program_destroy(spmd_x_program *program);

/**
 * Adds input number spmd_x_program_input_count(): an abstract array of the
 * given shape, dtype and sharding. Each run binds an array of exactly that
 * shape and dtype, laid out as the sharding lays it out.
 *
 * @param program A program still recording; not NULL.
 * @param sharding The input's layout, on the program's runtime; not NULL.
 * @param dtype The element type.
 * @param ndim Number of dimensions; shape may be NULL when 0.
 * @param shape The global shape.
 * @param out Receives the input's value (an spmd_array handle); not NULL.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT naming the argument for a
 *         NULL handle, an invalid dtype or shape, a sharding of another
 *         runtime or rank, or a program already compiled.
 */
SPMD_API spmd_status spmd_x_program_input(spmd_x_program *program, const spmd_sharding *sharding,
                                          spmd_dtype dtype, size_t ndim, const int64_t *shape,
                                          spmd_array **out);

/**
 * Marks input `input` donated (jax.jit's donate_argnums): each run
 * consumes the array bound to it, as an eager op consumes a donated
 * operand (its handle then only answers spmd_array_destroy; other calls
 * fail naming spmd_x_program_run), and the op that reads it last may write
 * its result into the array's buffers, saving their memory.
 *
 * @param program A program still recording; not NULL.
 * @param input An input's number, below spmd_x_program_input_count().
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL handle, another
 *         number, or a program already compiled.
 */
SPMD_API spmd_status spmd_x_program_donate(spmd_x_program *program, size_t input);

/**
 * Adds output number spmd_x_program_output_count(): a value recorded into
 * the program (an input or an op's result).
 *
 * @param program A program still recording; not NULL.
 * @param value The value; not NULL.
 * @param sharding The layout the output is brought to (jax.jit's
 *        out_shardings), over the value's devices: placement starts the
 *        value from it, as jax.jit does, and a reshard after the program
 *        brings it there if it ends up otherwise; NULL keeps the layout
 *        the program places it in.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT naming the argument for a
 *         NULL handle, a value of another program or an array with values,
 *         a sharding over other devices or of another rank, or a program
 *         already compiled.
 */
SPMD_API spmd_status spmd_x_program_output(spmd_x_program *program, const spmd_array *value,
                                           const spmd_sharding *sharding);

/**
 * Ends recording and plans the program's runs. Values of the program can
 * no longer be given to ops.
 *
 * @param program A program still recording; not NULL.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL handle, a program
 *         with no output, or one compiled already.
 */
SPMD_API spmd_status spmd_x_program_compile(spmd_x_program *program);

/**
 * The number of inputs recorded so far.
 *
 * @param program The program; not NULL.
 * @param out Receives the count; not NULL.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or dead argument.
 */
SPMD_API spmd_status spmd_x_program_input_count(const spmd_x_program *program, size_t *out);

/**
 * The number of outputs recorded so far.
 *
 * @param program The program; not NULL.
 * @param out Receives the count; not NULL.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or dead argument.
 */
SPMD_API spmd_status spmd_x_program_output_count(const spmd_x_program *program, size_t *out);

/**
 * Runs a compiled program.
 *
 * @param program A compiled program; not NULL.
 * @param n_inputs The number of inputs recorded.
 * @param inputs Input k is inputs[k]: an array with values, of input k's
 *        shape and dtype, laid out as its sharding; left as it is, unless
 *        input k is donated (spmd_x_program_donate): then consumed by a
 *        run that succeeds, and bound to no other input.
 * @param n_outputs The number of outputs recorded.
 * @param outputs Receives output k at outputs[k], a new array the caller
 *        destroys; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT naming the argument for a
 *         NULL handle, a program still recording, wrong counts, or an
 *         input of another shape, dtype, layout or runtime
 *         ("inputs[1]: ..."); an op's own error as the eager op gives it.
 */
SPMD_API spmd_status spmd_x_program_run(const spmd_x_program *program, size_t n_inputs,
                                        const spmd_array *const *inputs, size_t n_outputs,
                                        spmd_array **outputs);

/**
 * The program for people: each value's dtype, shape and partition spec,
 * each op with the data it moves between devices and its flops, the fused
 * passes and the totals (jax.jit(f).lower(...).as_text() and
 * .cost_analysis(), written to be read).
 *
 * @param program The program, recording or compiled; not NULL.
 * @param out Receives a NUL-terminated string, freed with
 *        spmd_string_free; not NULL.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or dead argument.
 */
SPMD_API spmd_status spmd_x_program_text(const spmd_x_program *program, char **out);

SPMD_EXTERN_C_END

#endif /* SPMD_EXPERIMENTAL_PROGRAM_H */
