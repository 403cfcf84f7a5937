# Persistent collectives: planned once, executed many times.

const _COLLECTIVES = (
    psum=LibSPMD.SPMD_COLLECTIVE_PSUM, pmean=LibSPMD.SPMD_COLLECTIVE_PMEAN,
    pmax=LibSPMD.SPMD_COLLECTIVE_PMAX, pmin=LibSPMD.SPMD_COLLECTIVE_PMIN,
    all_gather=LibSPMD.SPMD_COLLECTIVE_ALL_GATHER,
    psum_scatter=LibSPMD.SPMD_COLLECTIVE_PSUM_SCATTER,
    all_to_all=LibSPMD.SPMD_COLLECTIVE_ALL_TO_ALL, ppermute=LibSPMD.SPMD_COLLECTIVE_PPERMUTE,
)

"""
    Collective(kind, input_sharding, axes, T, shape...; dims=1, concat_dims=1,
               tiled=false, pairs=(), timeout_ms=0)

A planned collective (`spmd_collective_create`): `kind` one of
$(join(keys(_COLLECTIVES), ", ")), over the mesh axes `axes` ("x", a tuple of
names, or `()`) of the mesh of `input_sharding`, for arrays of element type
`T` and global shape `shape` laid out by it. `dims` is the 1-based
dimension all_gather inserts or joins along, psum_scatter scatters and
all_to_all splits; `concat_dims` all_to_all's concatenated dimension;
`pairs` ppermute's `source => dest` axis indices (0-based, as
[`axis_index`](@ref)). The result is what the matching shard_map gives.
[`execute`](@ref) runs it; its executions run one after another. Released by
the garbage collector or `close`.
"""
mutable struct Collective <: Handle{LibSPMD.spmd_collective}
    ptr::Ptr{LibSPMD.spmd_collective}
    closed::Bool
    Collective(ptr::Ptr{LibSPMD.spmd_collective}) = finalizer(close, new(ptr, false))
end
_destroy(c::Collective) = LibSPMD.spmd_collective_destroy(c.ptr)

function Collective(kind::Symbol, s::Sharding, axes, ::Type{T}, shape::Integer...;
                    dims::Integer=1, concat_dims::Integer=1, tiled::Bool=false, pairs=(),
                    timeout_ms::Integer=0) where {T}
    haskey(_COLLECTIVES, kind) ||
        throw(ArgumentError("kind must be one of $(keys(_COLLECTIVES)), not :$kind"))
    cshape = _shape(shape)
    flat = _flat_pairs(pairs)
    options = _initialised(LibSPMD.spmd_collective_options_init, LibSPMD.spmd_collective_options)
    return GC.@preserve flat begin
        options[] = _with(options[]; axis=_axis(dims), concat_axis=_axis(concat_dims),
                          tiled=Cint(tiled), npairs=length(flat) ÷ 2, pairs=_pointer_or_null(flat),
                          timeout_ms=Int64(timeout_ms))
        _handle_out(Collective) do out
            LibSPMD.spmd_collective_create(s, _COLLECTIVES[kind], _axes_text(axes), dtype(T),
                                           Csize_t(length(cshape)), cshape, options, out)
        end
    end
end

"""
    output_sharding(collective) -> Sharding

The sharding of the collective's output (`spmd_collective_output_sharding`).
`eltype`, `ndims` and `size` give its element type and global shape.
"""
output_sharding(c::Collective) =
    _handle_out(out -> LibSPMD.spmd_collective_output_sharding(c, out), Sharding)

Base.eltype(c::Collective) =
    eltype_of(_value_out(out -> LibSPMD.spmd_collective_output_dtype(c, out), LibSPMD.spmd_dtype))

Base.ndims(c::Collective) =
    Int(_value_out(out -> LibSPMD.spmd_collective_output_ndim(c, out), Csize_t))

function Base.size(c::Collective)
    shape = zeros(Int64, ndims(c))
    nd = Ref{Csize_t}(0)
    _check(LibSPMD.spmd_collective_output_shape(c, Csize_t(length(shape)), shape, nd))
    return Tuple(Int(d) for d in shape)
end

"""
    execute(collective, x) -> ShardedArray
    execute!(output, collective, x) -> output

Runs the collective on `x` (of the planned element type and shape; resharded
first when laid out otherwise) into a new array, or into `output`, an array
of the output's sharding, type and shape, reusing its buffers
(`spmd_collective_execute`, `spmd_collective_execute_into`).
"""
function execute(c::Collective, x::ShardedArray)
    return _array_out(out -> LibSPMD.spmd_collective_execute(c, x, out))
end

function execute!(output::ShardedArray, c::Collective, x::ShardedArray)
    _check(LibSPMD.spmd_collective_execute_into(c, x, output))
    return output
end
