# Sharded arrays, and the row-major / column-major question.
#
# libspmd's host buffers are row-major (C order): the last index varies
# fastest. Julia's arrays are column-major. The rule here: a Julia array A
# of size (d1, ..., dn) IS the global array of shape (d1, ..., dn), with
# A[i1, ..., in] its element (i1-1, ..., in-1). device_put therefore sends
# permutedims(A, (n, ..., 1)), whose column-major memory is A's row-major
# order, and Array(x) reads the row-major buffer into an array of the
# reversed size and permutes it back. Shapes, dimensions (dims=2 is JAX's
# axis=1), slices and shard indices all follow: they are the global array's,
# 1-based.

"""
    ShardedArray{T,N}

A sharded array (`jax.Array`): a global shape and element type laid out by a
[`Sharding`](@ref), one buffer per device. Made by [`device_put`](@ref),
`zeros`/`fill`/[`arange`](@ref) with a sharding, the global ops, random
numbers and [`shard_map`](@ref).

`size(x)` is the global shape, the size of `Array(x)`. `repr(x)` (and the
REPL) shows JAX's repr, "Array([ 28.,  92., 156.], dtype=float32)";
`print(x)`/`string(x)` its str, numpy's "[ 28.  92. 156.]". Operations run
asynchronously, as in JAX: errors of that work surface at
[`block_until_ready`](@ref) or `Array(x)`. Released by the garbage collector
or `close(x)`.
"""
mutable struct ShardedArray{T,N} <: Handle{LibSPMD.spmd_array}
    ptr::Ptr{LibSPMD.spmd_array}
    closed::Bool
    ShardedArray{T,N}(ptr::Ptr{LibSPMD.spmd_array}) where {T,N} =
        finalizer(close, new{T,N}(ptr, false))
end
_destroy(x::ShardedArray) = LibSPMD.spmd_array_destroy(x.ptr)

# Wraps a new array handle, asking for its dtype and rank; destroys it when
# that fails (the message is read first, by _check), or when the dtype is one
# this binding does not know (a newer library). While a record function
# runs on this task, the array is one record closes (_recorded!).
function _wrap_array(ptr::Ptr{LibSPMD.spmd_array})
    try
        dt = _value_out(out -> LibSPMD.spmd_array_dtype(ptr, out), LibSPMD.spmd_dtype)
        nd = _value_out(out -> LibSPMD.spmd_array_ndim(ptr, out), Csize_t)
        return _recorded!(ShardedArray{eltype_of(dt),Int(nd)}(ptr))
    catch
        LibSPMD.spmd_array_destroy(ptr)
        rethrow()
    end
end

# A new array through `spmd_array **out` (see _value_out).
_array_out(f) = _handle_out(f, ShardedArray, _wrap_array)

Base.eltype(::Type{ShardedArray{T,N}}) where {T,N} = T
Base.eltype(::ShardedArray{T}) where {T} = T
Base.ndims(::ShardedArray{T,N}) where {T,N} = N

function Base.size(x::ShardedArray{T,N}) where {T,N}
    shape = zeros(Int64, N)
    nd = Ref{Csize_t}(0)
    _check(LibSPMD.spmd_array_shape(x, Csize_t(N), shape, nd))
    return ntuple(i -> Int(shape[i]), N)
end
Base.size(x::ShardedArray, d::Integer) = d <= ndims(x) ? size(x)[d] : 1

Base.length(x::ShardedArray) = Int(_value_out(out -> LibSPMD.spmd_array_size(x, out), Int64))

"""
    nbytes(x) -> Int

Bytes of the global array, `length(x) * sizeof(eltype(x))` (`spmd_array_nbytes`).
"""
nbytes(x::ShardedArray) = Int(_value_out(out -> LibSPMD.spmd_array_nbytes(x, out), Csize_t))

"""
    sharding(x) -> Sharding

The array's sharding (`spmd_array_sharding`), a new handle.
"""
sharding(x::ShardedArray) = _handle_out(out -> LibSPMD.spmd_array_sharding(x, out), Sharding)

"""
    device(x) -> Int

`a.device`: the id of the one device of a single-device array
(`spmd_array_device`); an SPMDError for an array over several devices.
"""
device(x::ShardedArray) = Int(_value_out(out -> LibSPMD.spmd_array_device(x, out), Cint))

"""
    block_until_ready(x) -> x

Waits for the work producing x; throws the error of that work
(`spmd_array_block_until_ready`).
"""
function block_until_ready(x::ShardedArray)
    _check(LibSPMD.spmd_array_block_until_ready(x))
    return x
end

# ---- Host arrays in and out -----------------------------------------------

_reversed(N) = ntuple(i -> N + 1 - i, N)

# A's elements converted to T in row-major order: a dense Array{T}, A itself
# when it already is one of at most one dimension, else a single copy.
function _rowmajor_copy(::Type{T}, A::AbstractArray{<:Any,N}) where {T,N}
    N <= 1 && return A isa Array{T} ? A : Array{T,N}(A)
    return permutedims!(Array{T,N}(undef, reverse(size(A))), A, _reversed(N))
end
_rowmajor_copy(A::AbstractArray{T}) where {T} = _rowmajor_copy(T, A)

# A row-major buffer of the given shape as the Julia array it stands for.
_from_rowmajor(buf::Array{T,N}) where {T,N} = N <= 1 ? buf : permutedims(buf, _reversed(N))

"""
    device_put(A::AbstractArray, sharding) -> ShardedArray
    device_put(x::ShardedArray, sharding) -> ShardedArray

`jax.device_put`: the Julia array `A` as a sharded array of global shape
`size(A)` laid out by `sharding`; element `(i-1, j-1, ...)` of the global
array is `A[i, j, ...]`, so `Array(device_put(A, s)) == A`, a `P("x")`
sharding splits A's rows (its first dimension) and `sum(x; dims=2)` is
`sum(A; dims=2)`. libspmd takes row-major data: the array is copied through
`permutedims` on the way (`spmd_array_from_host`). The element type must be
one libspmd has (Float32, Float64, Float16, BFloat16, Int8, Int16, Int32,
Int64, UInt8, UInt16, UInt32, Bool). A sharded array is resharded instead (`spmd_array_reshard`), device to
device.
"""
function device_put(A::AbstractArray{T,N}, s::Sharding) where {T,N}
    dt = dtype(T)
    shape = _shape(size(A))
    host = _rowmajor_copy(A)
    return _array_out() do out
        LibSPMD.spmd_array_from_host(s, dt, Csize_t(N), shape, host, Csize_t(sizeof(host)), out)
    end
end

device_put(x::Number, s::Sharding) = device_put(fill(x), s)

"""
    make_array_from_process_local_data(sharding, A::AbstractArray, dims=size(A)) -> ShardedArray

`jax.make_array_from_process_local_data`: a sharded array of global shape
`dims` laid out by `sharding` from `A`, the part of it this process holds:
the smallest box covering the blocks of this process's devices, of size
[`process_local_shape`](@ref)`(sharding, dims)` (all of the array in a
runtime of one process, or where the sharding replicates it across
processes), indexed as `device_put` indexes. Each process passes its own
part; nothing crosses processes (`spmd_array_from_process_local_data`).
"""
function make_array_from_process_local_data(s::Sharding, A::AbstractArray{T}, dims=size(A)) where {T}
    dt = dtype(T)
    shape = _shape(dims)
    host = _rowmajor_copy(A)
    return _array_out() do out
        LibSPMD.spmd_array_from_process_local_data(s, dt, Csize_t(length(shape)), shape, host,
                                                   Csize_t(sizeof(host)), out)
    end
end

"""
    make_array_from_single_device_arrays(sharding, dims, arrays) -> ShardedArray
    make_array_from_single_device_arrays(T, sharding, dims, arrays) -> ShardedArray

`jax.make_array_from_single_device_arrays`: a sharded array of global shape
`dims` and element type `T` (by default that of the first of `arrays`) laid
out by `sharding` whose blocks on this process's devices are `arrays`, one
per such device in any order, each on that one device (made with a
[`single_device`](@ref) sharding, or any array [`device`](@ref) accepts) and
of its block's size (`size(shard_info(sharding, dims, i))`) and element type
T. They are copied; the caller keeps them. Each process passes its own
devices' blocks; nothing crosses processes
(`spmd_array_from_single_device_arrays`). An SPMDError for a wrong count, an
array on several devices, on a device not this process's in the mesh or
given twice, or of the wrong size or element type.
"""
function make_array_from_single_device_arrays(::Type{T}, s::Sharding, dims, arrays) where {T}
    dt = dtype(T)
    shape = _shape(dims)
    xs = collect(ShardedArray, arrays)
    ptrs = Ptr{LibSPMD.spmd_array}[x.ptr for x in xs]
    result = GC.@preserve xs begin
        _array_out() do out
            LibSPMD.spmd_array_from_single_device_arrays(s, dt, Csize_t(length(shape)), shape,
                                                         Csize_t(length(ptrs)), ptrs, out)
        end
    end
    return result
end
function make_array_from_single_device_arrays(s::Sharding, dims, arrays)
    xs = collect(ShardedArray, arrays)
    isempty(xs) && throw(ArgumentError("no arrays to take the element type from; give it: " *
                                       "make_array_from_single_device_arrays(T, sharding, dims, arrays)"))
    return make_array_from_single_device_arrays(eltype(first(xs)), s, dims, xs)
end

device_put(x::ShardedArray, s::Sharding) = reshard(x, s)

"""
    reshard(x, sharding) -> ShardedArray

The same values laid out by another sharding (`spmd_array_reshard`). On an
abstract array inside [`record`](@ref) it records a layout constraint
(`jax.lax.with_sharding_constraint`).
"""
function reshard(x::ShardedArray, s::Sharding)
    return _array_out(out -> LibSPMD.spmd_array_reshard(x, s, out))
end

"""
    Array(x::ShardedArray) -> Array

`np.asarray(x)`: the global array as a Julia array of size `size(x)`, waiting
for pending work (`spmd_array_to_host`, then `permutedims` from row-major).
A 0-dimensional array gives a 0-dimensional Array (`x[]` gives the scalar).
"""
function Base.Array(x::ShardedArray{T,N}) where {T,N}
    buf = Array{T,N}(undef, reverse(size(x)))
    _check(LibSPMD.spmd_array_to_host(x, buf, Csize_t(sizeof(buf))))
    return _from_rowmajor(buf)
end
Base.collect(x::ShardedArray) = Array(x)
Base.getindex(x::ShardedArray{T,0}) where {T} = Array(x)[]

"""
    process_allgather(x::ShardedArray) -> Array

`jax.experimental.multihost_utils.process_allgather(x, tiled=True)`: the
global array as a Julia array of size `size(x)` in every process, the blocks
other processes hold brought here (`spmd_array_process_allgather`, then
`permutedims` from row-major). Every process of the runtime must call it, in
the same order as its other calls across processes; in a runtime of one
process it is `Array(x)`, which over several processes refuses an array
that is not `is_fully_addressable`.
"""
function process_allgather(x::ShardedArray{T,N}) where {T,N}
    buf = Array{T,N}(undef, reverse(size(x)))
    _check(LibSPMD.spmd_array_process_allgather(x, buf, Csize_t(sizeof(buf))))
    return _from_rowmajor(buf)
end

"""
    is_fully_addressable(x::ShardedArray) -> Bool

`jax.Array.is_fully_addressable`: whether this process holds every shard of
x, as `Array(x)` needs (`spmd_array_is_fully_addressable`); always in a
runtime of one process.
"""
is_fully_addressable(x::ShardedArray) =
    _value_out(out -> LibSPMD.spmd_array_is_fully_addressable(x, out), Cint) != 0

# ---- Made on the devices --------------------------------------------------

"""
    zeros(T, sharding, dims...) -> ShardedArray
    fill(value, sharding, dims...) -> ShardedArray

Arrays of zeros or of `value` (converted to T = typeof(value) as jnp.full
converts), made on the devices (`spmd_array_zeros`, `spmd_array_full`).
"""
function Base.zeros(::Type{T}, s::Sharding, dims::Integer...) where {T}
    shape = _shape(dims)
    return _array_out() do out
        LibSPMD.spmd_array_zeros(s, dtype(T), Csize_t(length(shape)), shape, out)
    end
end

function Base.fill(value::T, s::Sharding, dims::Integer...) where {T<:Real}
    shape = _shape(dims)
    return _array_out() do out
        LibSPMD.spmd_array_full(s, dtype(T), Csize_t(length(shape)), shape, Float64(value), out)
    end
end

"""
    arange(T, sharding, dims...; start=0, step=1) -> ShardedArray

`jnp.arange(start, start + n*step, step).reshape(dims)` of element type T:
element k of the global array in row-major order is `start + k*step`, so
`arange(Float32, s, 3, 8)` is the notebooks' `jnp.arange(24.0).reshape(3, 8)`:
row i holds 8(i-1), ..., 8(i-1)+7 (`spmd_array_arange`).
"""
function arange(::Type{T}, s::Sharding, dims::Integer...; start::Real=0, step::Real=1) where {T}
    shape = _shape(dims)
    return _array_out() do out
        LibSPMD.spmd_array_arange(s, dtype(T), Csize_t(length(shape)), shape, Float64(start),
                                  Float64(step), out)
    end
end

# ---- Shards -----------------------------------------------------------------

"""
    shard_count(x) -> Int

Number of shards, one per device of the sharding (`spmd_array_shard_count`);
over several processes every shard, those of other processes' devices
described but not readable here.
"""
shard_count(x::ShardedArray) =
    Int(_value_out(out -> LibSPMD.spmd_array_shard_count(x, out), Csize_t))

"""
    shard_info(x, i) -> ShardInfo
    shard_info(x; device=id) -> ShardInfo

Shard `i` (1-based, mesh device order) of the array, or its shard on device
`id` (`spmd_array_shard_info`, `spmd_array_shard_info_of_device`):
`Array(x)[info.indices...]` is that shard's block.
"""
shard_info(x::ShardedArray, i::Integer) =
    _shard_info_out(info -> LibSPMD.spmd_array_shard_info(x, Csize_t(i - 1), info))
shard_info(x::ShardedArray; device::Integer) =
    _shard_info_out(info -> LibSPMD.spmd_array_shard_info_of_device(x, Cint(device), info))

"""
    shard_read(x, i) -> Array

A copy of shard `i` (1-based) as a Julia array of its local shape
(`spmd_array_shard_read`, converted from row-major).
"""
function shard_read(x::ShardedArray{T,N}, i::Integer) where {T,N}
    info = shard_info(x, i)
    buf = Array{T,N}(undef, reverse(size(info)))
    _check(LibSPMD.spmd_array_shard_read(x, Csize_t(i - 1), buf, Csize_t(sizeof(buf))))
    return _from_rowmajor(buf)
end

"""
    shard_write!(x, i, A) -> x

Overwrites shard `i` (1-based) with the Julia array `A` of the shard's local
shape (`spmd_array_shard_write`). Only that device's copy changes: keeping
replicas equal is the caller's duty.
"""
function shard_write!(x::ShardedArray{T,N}, i::Integer, A::AbstractArray) where {T,N}
    host = _rowmajor_copy(T, A)  # converted and reordered in one copy
    _check(LibSPMD.spmd_array_shard_write(x, Csize_t(i - 1), host, Csize_t(sizeof(host))))
    return x
end

# ---- Checkpoints --------------------------------------------------------------

"""
    save_checkpoint(x::ShardedArray, dir::AbstractString) -> nothing

Saves `x` to the directory `dir` as a checkpoint, as Orbax checkpoints a
`jax.Array` (`ocp.StandardCheckpointer().save(dir, x)`), in libspmd's own
layout (`spmd_array_save`): each process writes the blocks of its devices,
one file per block, and process 0 an index of them, so that
[`load_checkpoint`](@ref) restores it under any sharding, on any mesh and
number of processes. The directory is made if missing; throws
[`SPMDError`](@ref) when it already holds a checkpoint, or when a file cannot
be made or written (the message names the path and the system's reason).
Every process of the runtime calls it with the same directory, on a file
system they share; it waits for pending work and returns once the whole
checkpoint is written.
"""
function save_checkpoint(x::ShardedArray, dir::AbstractString)
    _check(LibSPMD.spmd_array_save(x, String(dir)))
    return nothing
end

"""
    load_checkpoint(sharding, dir::AbstractString) -> ShardedArray

Restores the array [`save_checkpoint`](@ref) wrote to the directory `dir`,
laid out by `sharding` (Orbax's restore of a `jax.Array` with
`ocp.ArrayRestoreArgs(sharding=...)`; `spmd_array_load`): its element type
and size are the saved ones, so the result's type is known only at run time;
each process reads only the parts of the saved blocks its own devices need.
Throws [`SPMDError`](@ref) for a directory without a checkpoint, a damaged
index or block file (named in the message), or a sharding whose spec does not
suit the saved rank.
"""
function load_checkpoint(s::Sharding, dir::AbstractString)
    path = String(dir)
    return _array_out(out -> LibSPMD.spmd_array_load(s, path, out))
end

# ---- Printing -----------------------------------------------------------------

Base.show(io::IO, x::ShardedArray) =
    print(io, _string_out(out -> LibSPMD.spmd_array_repr(x, out)))
Base.print(io::IO, x::ShardedArray) =
    print(io, _string_out(out -> LibSPMD.spmd_array_str(x, out)))

function visualize(x::ShardedArray; kw...)
    options = _visualize_options(; kw...)
    return _string_out(out -> LibSPMD.spmd_array_visualize(x, options, out))
end
