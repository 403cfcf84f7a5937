# DLPack: shards shared with other libraries without copies (spmd/dlpack.h).
# A tensor crosses as a `Ptr{LibSPMD.DLManagedTensor}`, the raw
# `DLManagedTensor *` every DLPack consumer takes.

"""
    shard_to_dlpack(x, i) -> Ptr{LibSPMD.DLManagedTensor}

Shard `i` (1-based) of `x` as a DLPack tensor viewing its memory, without a
copy, once its pending writes are done (`jax.dlpack`;
`spmd_array_shard_to_dlpack`). Hand it to another library, which calls its
deleter when done; it holds the memory until then, even after `x` is
freed. Read it only. Host memory (kDLCPU) on the cpu platform, the GPU's
(kDLCUDA) on cuda. An SPMDError past the last shard, for another process's
shard, or on the sim platform.
"""
function shard_to_dlpack(x::ShardedArray, i::Integer)
    out = Ref{Ptr{LibSPMD.DLManagedTensor}}(C_NULL)
    _check(LibSPMD.spmd_array_shard_to_dlpack(x, Csize_t(i - 1), out))
    return out[]
end

"""
    from_dlpack(T, sharding, dims, devices, tensors) -> ShardedArray

A sharded array of element type `T` and global shape `dims` laid out by
`sharding` whose blocks on this process's devices are DLPack tensors,
adopted without a copy: `tensors[k]` is the block of device `devices[k]`,
one per such device, each on that device's memory, of element type `T` and
the block's row-major shape, compact and ready (`spmd_array_from_dlpack`).
On success the array owns them and calls each deleter once its block is no
longer used; on an error the caller keeps them all.
"""
function from_dlpack(::Type{T}, s::Sharding, dims, devices, tensors) where {T}
    length(devices) == length(tensors) ||
        throw(ArgumentError("from_dlpack: $(length(devices)) devices for " *
                            "$(length(tensors)) tensors; one each"))
    dt = dtype(T)
    shape = _shape(dims)
    ids = Cint[d for d in devices]
    ptrs = Ptr{LibSPMD.DLManagedTensor}[t for t in tensors]
    return _array_out() do out
        LibSPMD.spmd_array_from_dlpack(s, dt, Csize_t(length(shape)), shape,
                                       Csize_t(length(ptrs)), ids, ptrs, out)
    end
end
