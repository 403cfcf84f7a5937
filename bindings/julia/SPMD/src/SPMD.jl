"""
    SPMD

JAX's SPMD sharding model in Julia, on libspmd: runtimes of virtual devices,
meshes with named axes, partition specs, named shardings, sharded arrays,
global ops, `shard_map` with collectives, persistent collectives and random
numbers.

Arrays: a Julia array `A` handed to [`device_put`](@ref) becomes the global
array of shape `size(A)` whose element `(i-1, j-1, ...)` is `A[i, j, ...]`, and
`Array(x)` gives it back; libspmd's row-major buffers are converted on the
way (see the README).

Errors: every failing call throws [`SPMDError`](@ref) with the library's
status and message.

Handles: [`Runtime`](@ref), [`Mesh`](@ref), [`Spec`](@ref),
[`Sharding`](@ref), [`ShardedArray`](@ref) and [`Collective`](@ref) free
their C handle when garbage collected, or at once with `close` (idempotent).

Callbacks: [`shard_map`](@ref) runs a Julia function on libspmd's device
threads, which Julia adopts (Julia 1.9 or newer).

Programs (experimental): [`record`](@ref) traces a Julia function of sharded
arrays once, as `jax.jit`, into a [`Program`](@ref) called as often as
needed; [`key_data`](@ref) makes a key an argument, whose draws each call
reads anew, and whose `split` and `fold_in` derive a step's keys.

The raw layer, one function per C function, is the submodule `SPMD.LibSPMD`.
"""
module SPMD

include("LibSPMD.jl")
import .LibSPMD

export SPMDError, live_handles
export Runtime, Device, devices, device_count, device_info, platform, process_index,
       process_count, local_device_count
export Mesh, axis_names, device_ids, device_at, device_coords
export Spec, P, Sharding, NamedSharding, replicated, single_device, is_fully_replicated,
       spec, mesh, ShardInfo, shard_info, process_local_shape
export ShardedArray, BFloat16, device_put, sharding, device, block_until_ready, shard_count,
       shard_read, shard_write!, reshard, visualize, arange, nbytes, process_allgather,
       is_fully_addressable, make_array_from_process_local_data,
       make_array_from_single_device_arrays, save_checkpoint, load_checkpoint,
       shard_to_dlpack, from_dlpack
export astype, onehot, take, scatter_add, dynamic_slice, select, rsqrt, relu, sigmoid, gelu, softmax, logsoftmax, dot_general, matmul,
       einsum, reshape_rowmajor, broadcast_to, concatenate
export Key, PRNGKey, fold_in, random_bits, uniform, normal, truncated_normal, key_data
export shard_map, ShardContext, Block, device_id, stream, axis_index, axis_size, input_count,
       input, alloc, set_output, rowmajor, memory_kind, psum, pmean, pmax, pmin, all_gather,
       psum_scatter, all_to_all, ppermute
export Collective, execute, execute!, output_sharding
export record, Program, InputSpec, output_count

include("common.jl")
include("handles.jl")
include("arrays.jl")
include("ops.jl")
include("random.jl")
include("shard_map.jl")
include("collective.jl")
include("dlpack.jl")
include("program.jl")

end # module SPMD
