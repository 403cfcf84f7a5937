# Random numbers identical to jax.random (threefry2x32, partitionable), made
# sharded: each device computes its own block, and the values do not depend
# on the sharding.

"""
    Key

A PRNG key, the two words of JAX's uint32[2] key data (`spmd_key`): a plain
value. Made by [`PRNGKey`](@ref), [`split`](@ref Base.split(::Key, ::Integer))
and [`fold_in`](@ref).
"""
struct Key
    words::NTuple{2,UInt32}
end

Base.show(io::IO, k::Key) = print(io, "Key(", repr(k.words[1]), ", ", repr(k.words[2]), ")")

_raw(k::Key) = Ref(LibSPMD.spmd_key(k.words))

"""
    PRNGKey(seed) -> Key

`jax.random.PRNGKey(seed)`: words `(seed >> 32, seed & 0xffffffff)`
(`spmd_random_key`). A negative seed is taken as its 64-bit two's complement,
JAX's key under jax_enable_x64.
"""
PRNGKey(seed::Integer) =
    Key(_value_out(out -> LibSPMD.spmd_random_key(seed % UInt64, out), LibSPMD.spmd_key).words)

"""
    split(key, n=2) -> Vector{Key}

`jax.random.split(key, n)` (`spmd_random_split`).
"""
function Base.split(k::Key, n::Integer=2)
    out = Vector{LibSPMD.spmd_key}(undef, n)
    _check(LibSPMD.spmd_random_split(_raw(k), Csize_t(n), n == 0 ? C_NULL : out))
    return [Key(w.words) for w in out]
end

"""
    fold_in(key, data) -> Key

`jax.random.fold_in(key, data)`; data is taken modulo 2^32 as JAX does
(`spmd_random_fold_in`).
"""
fold_in(k::Key, data::Integer) =
    Key(_value_out(out -> LibSPMD.spmd_random_fold_in(_raw(k), data % UInt32, out),
                   LibSPMD.spmd_key).words)

# The dtype random_bits makes for T (UInt64 fields in an Int64 array).
_bits_dtype(::Type{T}) where {T} =
    T === UInt8 ? LibSPMD.SPMD_U8 : T === UInt16 ? LibSPMD.SPMD_U16 :
    T === UInt32 ? LibSPMD.SPMD_U32 : T === UInt64 ? LibSPMD.SPMD_I64 :
    throw(ArgumentError("random_bits makes UInt8, UInt16, UInt32 or UInt64 fields, not $T"))

"""
    random_bits(key, sharding, T, dims...) -> ShardedArray

`jax.random.bits(key, dims, T)` for T = UInt8, UInt16, UInt32 or UInt64,
bit-exact with JAX (`spmd_random_bits`). libspmd has no uint64: it stores
64-bit fields in an Int64 array, so reinterpret `Array(x)` to get the
unsigned values.
"""
function random_bits(k::Key, s::Sharding, ::Type{T}, dims::Integer...) where {T}
    dt = _bits_dtype(T)
    shape = _shape(dims)
    return _array_out() do out
        LibSPMD.spmd_random_bits(s, _raw(k), dt, Csize_t(length(shape)), shape, out)
    end
end

"""
    uniform(key, sharding, T, dims...; minval=0, maxval=1) -> ShardedArray

`jax.random.uniform`: floats of type T (Float32, Float64, Float16, BFloat16)
in [minval, maxval) (`spmd_random_uniform`).
"""
function uniform(k::Key, s::Sharding, ::Type{T}, dims::Integer...; minval::Real=0,
                 maxval::Real=1) where {T}
    shape = _shape(dims)
    return _array_out() do out
        LibSPMD.spmd_random_uniform(s, _raw(k), dtype(T), Csize_t(length(shape)), shape,
                                    Float64(minval), Float64(maxval), out)
    end
end

"""
    normal(key, sharding, T, dims...) -> ShardedArray

`jax.random.normal`: standard normal floats (`spmd_random_normal`).
"""
function normal(k::Key, s::Sharding, ::Type{T}, dims::Integer...) where {T}
    shape = _shape(dims)
    return _array_out() do out
        LibSPMD.spmd_random_normal(s, _raw(k), dtype(T), Csize_t(length(shape)), shape, out)
    end
end

"""
    truncated_normal(key, sharding, T, dims...; lower=-2, upper=2) -> ShardedArray

`jax.random.truncated_normal(key, lower, upper, dims, T)`: standard normal
floats in the open interval (lower, upper) (`spmd_random_truncated_normal`).
"""
function truncated_normal(k::Key, s::Sharding, ::Type{T}, dims::Integer...; lower::Real=-2,
                          upper::Real=2) where {T}
    shape = _shape(dims)
    return _array_out() do out
        LibSPMD.spmd_random_truncated_normal(s, _raw(k), dtype(T), Csize_t(length(shape)),
                                             shape, Float64(lower), Float64(upper), out)
    end
end

# Keys as arrays (experimental: spmd/experimental/random.h, which may change
# in any release). The draws above read their key when called, so recorded
# into a program they would draw the same numbers at every call. key_data
# makes a key an array, jax.random.key_data's uint32[2], and the methods
# below, taking such an array for the key, read it from there: given an
# argument of a `record` function they record the draw, and each call of
# the program draws from the key data it is given, as a function under
# jax.jit draws from the key it is passed. Outside programs they give what
# the draws from the Key give, bit for bit. fold_in and split of key data
# derive key data as those of a Key derive keys, so that a program derives
# each step's keys from the one it is given.

"""
    key_data(key, sharding) -> ShardedArray{UInt32,1}

`jax.random.key_data(key)`: the key's two words as a 2-element UInt32 array
laid out by `sharding`, a replicated one normally
(`spmd_x_random_key_data`). `random_bits`, `uniform`, `normal`,
`truncated_normal`, `fold_in` and `split` take it in place of the key.
Experimental.
"""
key_data(k::Key, s::Sharding) = _array_out(out -> LibSPMD.spmd_x_random_key_data(s, _raw(k), out))

"""
    random_bits(key::ShardedArray, sharding, T, dims...) -> ShardedArray

`random_bits` with the key read from `key`, a UInt32 array of 2 elements
([`key_data`](@ref), any layout); given a value of a program being recorded,
records the draw (`spmd_x_random_bits_from`). An `SPMDError` naming `key`
for another element type or size. Experimental.
"""
function random_bits(k::ShardedArray, s::Sharding, ::Type{T}, dims::Integer...) where {T}
    dt = _bits_dtype(T)
    shape = _shape(dims)
    return _array_out() do out
        LibSPMD.spmd_x_random_bits_from(s, k, dt, Csize_t(length(shape)), shape, out)
    end
end

"""
    uniform(key::ShardedArray, sharding, T, dims...; minval=0, maxval=1) -> ShardedArray

`uniform` with the key read from `key`, as `random_bits` reads it
(`spmd_x_random_uniform_from`). Experimental.
"""
function uniform(k::ShardedArray, s::Sharding, ::Type{T}, dims::Integer...; minval::Real=0,
                 maxval::Real=1) where {T}
    shape = _shape(dims)
    return _array_out() do out
        LibSPMD.spmd_x_random_uniform_from(s, k, dtype(T), Csize_t(length(shape)), shape,
                                           Float64(minval), Float64(maxval), out)
    end
end

"""
    normal(key::ShardedArray, sharding, T, dims...) -> ShardedArray

`normal` with the key read from `key`, as `random_bits` reads it
(`spmd_x_random_normal_from`). Experimental.
"""
function normal(k::ShardedArray, s::Sharding, ::Type{T}, dims::Integer...) where {T}
    shape = _shape(dims)
    return _array_out() do out
        LibSPMD.spmd_x_random_normal_from(s, k, dtype(T), Csize_t(length(shape)), shape, out)
    end
end

"""
    truncated_normal(key::ShardedArray, sharding, T, dims...; lower=-2, upper=2) -> ShardedArray

`truncated_normal` with the key read from `key`, as `random_bits` reads it
(`spmd_x_random_truncated_normal_from`). Experimental.
"""
function truncated_normal(k::ShardedArray, s::Sharding, ::Type{T}, dims::Integer...;
                          lower::Real=-2, upper::Real=2) where {T}
    shape = _shape(dims)
    return _array_out() do out
        LibSPMD.spmd_x_random_truncated_normal_from(s, k, dtype(T), Csize_t(length(shape)),
                                                    shape, Float64(lower), Float64(upper), out)
    end
end

"""
    fold_in(key::ShardedArray, data) -> ShardedArray{UInt32,1}

`fold_in` on key data: the data of `jax.random.fold_in(key, data)` with the
key read from `key` ([`key_data`](@ref)), laid out as `key`; data is taken
modulo 2^32. Given a value of a program being recorded, records itself, so
that a program derives a key from the one each call is given
(`spmd_x_random_fold_in_from`). An `SPMDError` naming `key` for another
element type or size. Experimental.
"""
fold_in(k::ShardedArray, data::Integer) =
    _array_out(out -> LibSPMD.spmd_x_random_fold_in_from(k, data % UInt32, out))

"""
    split(key::ShardedArray, n=2) -> Vector{ShardedArray{UInt32,1}}

`split` on key data: the data of `jax.random.split(key, n)`'s n keys, each a
2-element UInt32 array laid out as `key`, ready for a draw (JAX's split
gives one (n, 2) array). Given a value of a program being recorded, records
itself as one step of n results (`spmd_x_random_split_from`). An `SPMDError`
naming `key` for another element type or size. Experimental.
"""
function Base.split(k::ShardedArray, n::Integer=2)
    results = fill(Ptr{LibSPMD.spmd_array}(C_NULL), n)
    _check(LibSPMD.spmd_x_random_split_from(k, Csize_t(n), n == 0 ? C_NULL : results))
    keys = ShardedArray{UInt32,1}[]
    try
        for r in results
            push!(keys, _wrap_array(r))
        end
    catch
        # _wrap_array destroyed the one that failed; the others not yet wrapped.
        foreach(LibSPMD.spmd_array_destroy, results[length(keys)+2:end])
        foreach(close, keys)
        rethrow()
    end
    return keys
end
