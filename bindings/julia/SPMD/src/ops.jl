# Global ops (spmd/ops.h): jax.numpy under jax.jit on sharded arrays.
#
# Every op takes the keywords `out_sharding` (a Sharding on the operands'
# mesh: with_sharding_constraint) and `donate` (operand positions, 1-based,
# whose buffers the result may reuse: the donated arrays become unusable, and
# are still closed as usual). Dimensions are 1-based Julia dims of the global
# shape. Broadcasting between two sharded arrays follows NumPy's rule, as JAX
# does: trailing dimensions are aligned (a length-8 vector broadcasts against
# a 3x8 array along its rows); equal shapes and scalars behave as in Julia.

const _OpOptions = LibSPMD.spmd_op_options

# Calls f(options_ref) with the op options built from the keywords, the
# out_sharding kept alive meanwhile, and wraps the array it makes.
function _op(f; out_sharding::Union{Nothing,Sharding}=nothing, donate=())
    options = _initialised(LibSPMD.spmd_op_options_init, _OpOptions)
    mask = UInt32(0)
    for i in (donate === true ? (1,) : donate === false ? () : donate)
        mask |= UInt32(1) << (i - 1)
    end
    sp = out_sharding === nothing ? Ptr{LibSPMD.spmd_sharding}(C_NULL) : out_sharding.ptr
    options[] = _with(options[]; out_sharding=sp, donate=mask)
    return GC.@preserve out_sharding _array_out(out -> f(options, out))
end

const _UNARY = (
    neg=LibSPMD.SPMD_UNARY_NEG, abs=LibSPMD.SPMD_UNARY_ABS, exp=LibSPMD.SPMD_UNARY_EXP,
    log=LibSPMD.SPMD_UNARY_LOG, sin=LibSPMD.SPMD_UNARY_SIN, cos=LibSPMD.SPMD_UNARY_COS,
    tanh=LibSPMD.SPMD_UNARY_TANH, sqrt=LibSPMD.SPMD_UNARY_SQRT, rsqrt=LibSPMD.SPMD_UNARY_RSQRT,
    relu=LibSPMD.SPMD_UNARY_RELU, sigmoid=LibSPMD.SPMD_UNARY_LOGISTIC,
    gelu_tanh=LibSPMD.SPMD_UNARY_GELU_TANH, gelu_exact=LibSPMD.SPMD_UNARY_GELU_EXACT,
)

"""
    unary(op::Symbol, x; out_sharding, donate) -> ShardedArray

An elementwise function of x (`spmd_unary`), op one of $(join(keys(_UNARY), ", ")).
The Base functions `-`, `abs`, `exp`, `log`, `sin`, `cos`, `tanh`, `sqrt` (and
their broadcast forms, `sin.(x)`) call it, as do [`rsqrt`](@ref),
[`relu`](@ref), [`sigmoid`](@ref) and [`gelu`](@ref).
"""
function unary(op::Symbol, x::ShardedArray; kw...)
    code = _UNARY[op]
    return _op(; kw...) do options, out
        LibSPMD.spmd_unary(code, x, options, out)
    end
end

Base.:-(x::ShardedArray) = unary(:neg, x)
for f in (:abs, :exp, :log, :sin, :cos, :tanh, :sqrt)
    @eval Base.$f(x::ShardedArray; kw...) = unary($(QuoteNode(f)), x; kw...)
    @eval Base.broadcasted(::typeof(Base.$f), x::ShardedArray) = unary($(QuoteNode(f)), x)
end
Base.broadcasted(::typeof(-), x::ShardedArray) = unary(:neg, x)

"""
    rsqrt(x), relu(x), sigmoid(x), gelu(x; approximate=true)

1/sqrt(x), jax.nn.relu, jax.nn.sigmoid and jax.nn.gelu, elementwise.
"""
rsqrt(x::ShardedArray; kw...) = unary(:rsqrt, x; kw...)
relu(x::ShardedArray; kw...) = unary(:relu, x; kw...)
sigmoid(x::ShardedArray; kw...) = unary(:sigmoid, x; kw...)
gelu(x::ShardedArray; approximate::Bool=true, kw...) =
    unary(approximate ? :gelu_tanh : :gelu_exact, x; kw...)

"""
    astype(x, T; out_sharding, donate) -> ShardedArray

`x.astype(T)`, keeping the sharding (`spmd_astype`).
"""
function astype(x::ShardedArray, ::Type{T}; kw...) where {T}
    dt = dtype(T)
    return _op(; kw...) do options, out
        LibSPMD.spmd_astype(x, dt, options, out)
    end
end

const _BINARY = (
    add=LibSPMD.SPMD_BINARY_ADD, sub=LibSPMD.SPMD_BINARY_SUB, mul=LibSPMD.SPMD_BINARY_MUL,
    div=LibSPMD.SPMD_BINARY_DIV, max=LibSPMD.SPMD_BINARY_MAX, min=LibSPMD.SPMD_BINARY_MIN,
    pow=LibSPMD.SPMD_BINARY_POW, eq=LibSPMD.SPMD_BINARY_EQ, ne=LibSPMD.SPMD_BINARY_NE,
    lt=LibSPMD.SPMD_BINARY_LT, le=LibSPMD.SPMD_BINARY_LE, gt=LibSPMD.SPMD_BINARY_GT,
    ge=LibSPMD.SPMD_BINARY_GE,
)

"""
    binary(op::Symbol, x, y; out_sharding, donate) -> ShardedArray

x op y elementwise with NumPy broadcasting, in JAX's promoted type
(comparisons give Bool): `spmd_binary` for two arrays, `spmd_binary_scalar`
and `spmd_scalar_binary` with a number on one side (a weak type, as a Python
scalar). op is one of $(join(keys(_BINARY), ", ")). The operators call it:
`x + y`, `x - y`, `x .* y`, `x ./ y`, `x .^ y`, `max.(x, y)`, `x .< y`, ...,
and `x * s`, `s * x`, `x / s` with a number s.
"""
function binary(op::Symbol, x::ShardedArray, y::ShardedArray; kw...)
    code = _BINARY[op]
    return _op(; kw...) do options, out
        LibSPMD.spmd_binary(code, x, y, options, out)
    end
end

function binary(op::Symbol, x::ShardedArray, s::Real; kw...)
    code = _BINARY[op]
    return _op(; kw...) do options, out
        LibSPMD.spmd_binary_scalar(code, x, Float64(s), options, out)
    end
end

function binary(op::Symbol, s::Real, x::ShardedArray; kw...)
    code = _BINARY[op]
    return _op(; kw...) do options, out
        LibSPMD.spmd_scalar_binary(code, Float64(s), x, options, out)
    end
end

const _BROADCAST_OPS = ((:+, :add), (:-, :sub), (:*, :mul), (:/, :div), (:^, :pow),
                        (:max, :max), (:min, :min), (:(==), :eq), (:(!=), :ne), (:<, :lt),
                        (:(<=), :le), (:>, :gt), (:(>=), :ge))

for (f, op) in _BROADCAST_OPS
    q = QuoteNode(op)
    @eval begin
        Base.broadcasted(::typeof($f), x::ShardedArray, y::ShardedArray) = binary($q, x, y)
        Base.broadcasted(::typeof($f), x::ShardedArray, s::Real) = binary($q, x, s)
        Base.broadcasted(::typeof($f), s::Real, x::ShardedArray) = binary($q, s, x)
    end
end
# x .^ 2 lowers to literal_pow.
Base.broadcasted(::typeof(Base.literal_pow), ::typeof(^), x::ShardedArray, ::Val{p}) where {p} =
    binary(:pow, x, p)

for (f, op) in ((:+, :add), (:-, :sub))
    q = QuoteNode(op)
    @eval begin
        Base.$f(x::ShardedArray, y::ShardedArray) = binary($q, x, y)
        Base.$f(x::ShardedArray, s::Real) = binary($q, x, s)
        Base.$f(s::Real, x::ShardedArray) = binary($q, s, x)
    end
end
Base.:*(x::ShardedArray, s::Real) = binary(:mul, x, s)
Base.:*(s::Real, x::ShardedArray) = binary(:mul, s, x)
Base.:/(x::ShardedArray, s::Real) = binary(:div, x, s)

# Anything else broadcast over a sharded array is refused plainly.
Base.broadcastable(x::ShardedArray) = throw(ArgumentError(
    "this broadcast is not a libspmd op: sharded arrays broadcast with the unary functions " *
    "(sin.(x), ...), the arithmetic and comparison operators, max, min and ifelse"))

"""
    select(cond, x, y; out_sharding, donate) -> ShardedArray

`jnp.where(cond, x, y)` with broadcasting (`spmd_where`); also
`ifelse.(cond, x, y)`.
"""
function select(cond::ShardedArray, x::ShardedArray, y::ShardedArray; kw...)
    return _op(; kw...) do options, out
        LibSPMD.spmd_where(cond, x, y, options, out)
    end
end
Base.broadcasted(::typeof(ifelse), c::ShardedArray, x::ShardedArray, y::ShardedArray) =
    select(c, x, y)

# ---- Reductions ---------------------------------------------------------------

const _REDUCE = (sum=LibSPMD.SPMD_REDUCE_SUM, mean=LibSPMD.SPMD_REDUCE_MEAN,
                 max=LibSPMD.SPMD_REDUCE_MAX, min=LibSPMD.SPMD_REDUCE_MIN)

"""
    reduce_dims(op::Symbol, x; dims=:, keepdims, out_sharding, donate) -> ShardedArray

A reduction (`spmd_reduce`), op `:sum`, `:mean`, `:max` or `:min`, over
`dims` (an integer or a collection of them, 1-based; `:` for all). As in
Julia, reduced dimensions are kept with size 1 when `dims` is given and
dropped when it is `:` (a 0-dimensional result); `keepdims=false` drops them
as JAX does (`sum(x; dims=2, keepdims=false)` is `x.sum(axis=1)`). A reduced
dimension split over mesh axes ends in a psum over them.

`sum`, `maximum` and `minimum` of Base and [`mean`](@ref SPMD.mean) call it.
"""
function reduce_dims(op::Symbol, x::ShardedArray; dims=:, keepdims::Bool=!(dims isa Colon),
                     kw...)
    code = _REDUCE[op]
    axes = dims isa Colon ? Int64[] : Int64[_axis(d) for d in dims]
    return _op(; kw...) do options, out
        LibSPMD.spmd_reduce(code, x, Csize_t(length(axes)), isempty(axes) ? C_NULL : axes,
                            Cint(keepdims), options, out)
    end
end

Base.sum(x::ShardedArray; dims=:, kw...) = reduce_dims(:sum, x; dims=dims, kw...)
Base.maximum(x::ShardedArray; dims=:, kw...) = reduce_dims(:max, x; dims=dims, kw...)
Base.minimum(x::ShardedArray; dims=:, kw...) = reduce_dims(:min, x; dims=dims, kw...)

"""
    SPMD.mean(x; dims=:, keepdims, out_sharding, donate)

jnp.mean, as `sum` (not exported: Statistics has a `mean`).
"""
mean(x::ShardedArray; dims=:, kw...) = reduce_dims(:mean, x; dims=dims, kw...)

"""
    argmax(x; dims) -> ShardedArray{Int32}

The 1-based index of the first largest value along `dims` (a NaN is the
largest), that dimension removed: `jnp.argmax(x, axis=dims-1) + 1`
(`spmd_argmax`). `dims` may be left out for a vector.
"""
function Base.argmax(x::ShardedArray; dims::Integer=(ndims(x) == 1 ? 1 : 0), kw...)
    dims == 0 && throw(ArgumentError("argmax of a $(ndims(x))-dimensional array needs dims"))
    axis = _axis(dims)
    zero_based = _op(; kw...) do options, out
        LibSPMD.spmd_argmax(x, axis, options, out)
    end
    return _closing(i -> binary(:add, i, 1), zero_based)
end

"""
    argmin(x; dims) -> ShardedArray{Int32}

The 1-based index of the first smallest value along `dims` (a NaN is the
smallest), that dimension removed: `jnp.argmin(x, axis=dims-1) + 1`
(`spmd_argmin`). `dims` may be left out for a vector.
"""
function Base.argmin(x::ShardedArray; dims::Integer=(ndims(x) == 1 ? 1 : 0), kw...)
    dims == 0 && throw(ArgumentError("argmin of a $(ndims(x))-dimensional array needs dims"))
    axis = _axis(dims)
    zero_based = _op(; kw...) do options, out
        LibSPMD.spmd_argmin(x, axis, options, out)
    end
    return _closing(i -> binary(:add, i, 1), zero_based)
end

"""
    cumsum(x::ShardedArray; dims) -> ShardedArray

The running sum along `dims` (`jnp.cumsum(x, axis=dims-1)`, `spmd_cumsum`),
in x's element type (Bool sums as Int32); x's sharding is kept.
"""
function Base.cumsum(x::ShardedArray; dims::Integer, kw...)
    axis = _axis(dims)
    return _op(; kw...) do options, out
        LibSPMD.spmd_cumsum(x, axis, options, out)
    end
end

"""
    take(a, indices; dims) -> ShardedArray

`jnp.take(a, indices, axis=dims-1)` (`spmd_take`): the elements of `a` at
`indices` (of any integer type, counted from 0 as JAX's; below 0 from the
end) along `dims`; an index still out of range gives JAX's fill value.
"""
function take(a::ShardedArray, indices::ShardedArray; dims::Integer, kw...)
    axis = _axis(dims)
    return _op(; kw...) do options, out
        LibSPMD.spmd_take(a, indices, axis, options, out)
    end
end

"""
    scatter_add(x, indices, updates; dims) -> ShardedArray

`x.at[(slice(None),) * (dims-1) + (indices,)].add(updates)`
(`spmd_scatter_add`): `x` with `updates` (of size
`(size(x)[1:dims-1]..., size(indices)..., size(x)[dims+1:end]...)`) added
at `indices` (of any integer type, counted from 0 as JAX's; below 0 from
the end) along `dims`; an index still out of range is dropped, repeats
accumulate.
"""
function scatter_add(x::ShardedArray, indices::ShardedArray, updates::ShardedArray; dims::Integer, kw...)
    axis = _axis(dims)
    return _op(; kw...) do options, out
        LibSPMD.spmd_scatter_add(x, indices, updates, axis, options, out)
    end
end

"""
    onehot(x, num_classes, T=Float32; dims=ndims(x)+1) -> ShardedArray{T}

`jax.nn.one_hot(x, num_classes, dtype=T, axis=dims-1)` (`spmd_one_hot`): a new
dimension `dims` of length `num_classes`, 1 where x equals the class. The
classes count from 0, as JAX's (an index out of range gives zeros).
"""
function onehot(x::ShardedArray, num_classes::Integer, ::Type{T}=Float32;
                dims::Integer=ndims(x) + 1, kw...) where {T}
    axis = _axis(dims)
    dt = dtype(T)
    return _op(; kw...) do options, out
        LibSPMD.spmd_one_hot(x, Int64(num_classes), axis, dt, options, out)
    end
end

"""
    softmax(x; dims=ndims(x)), logsoftmax(x; dims=ndims(x))

jax.nn.softmax and log_softmax along `dims` (`spmd_softmax`).
"""
function softmax(x::ShardedArray; dims::Integer=ndims(x), log::Bool=false, kw...)
    axis = _axis(dims)
    return _op(; kw...) do options, out
        LibSPMD.spmd_softmax(x, axis, Cint(log), options, out)
    end
end
logsoftmax(x::ShardedArray; kw...) = softmax(x; log=true, kw...)

# ---- Contractions -----------------------------------------------------------------

"""
    dot_general(lhs, rhs; contract=((), ()), batch=((), ()), out_sharding, donate)

`lax.dot_general` with 1-based dimension numbers: `contract = (lhs_dims,
rhs_dims)`, `batch = (lhs_dims, rhs_dims)`. The result's dimensions are the
batch ones, then lhs's free ones, then rhs's (`spmd_dot_general`).
"""
function dot_general(lhs::ShardedArray, rhs::ShardedArray; contract=((), ()),
                     batch=((), ()), kw...)
    lb, rb = Int64[_axis(d) for d in batch[1]], Int64[_axis(d) for d in batch[2]]
    lc, rc = Int64[_axis(d) for d in contract[1]], Int64[_axis(d) for d in contract[2]]
    (length(lb) == length(rb) && length(lc) == length(rc)) ||
        throw(ArgumentError("dot_general: lhs and rhs need as many batch and contracting dims"))
    dims = _initialised(LibSPMD.spmd_dot_dims_init, LibSPMD.spmd_dot_dims)
    result = GC.@preserve lb rb lc rc begin
        dims[] = _with(dims[]; nbatch=length(lb), lhs_batch=pointer(lb), rhs_batch=pointer(rb),
                       ncontract=length(lc), lhs_contract=pointer(lc),
                       rhs_contract=pointer(rc))
        _op(; kw...) do options, out
            LibSPMD.spmd_dot_general(lhs, rhs, dims, options, out)
        end
    end
    return result
end

"""
    matmul(a, b; out_sharding, donate), a * b

`jnp.matmul` (`spmd_matmul`): `a * b` of two sharded arrays is the matrix
product, as for Julia matrices (elementwise is `a .* b`).
"""
function matmul(a::ShardedArray, b::ShardedArray; kw...)
    return _op(; kw...) do options, out
        LibSPMD.spmd_matmul(a, b, options, out)
    end
end
Base.:*(a::ShardedArray, b::ShardedArray) = matmul(a, b)

"""
    einsum(subscripts, a, b; out_sharding, donate)

`jnp.einsum` of two operands with an explicit output, "bhqd,bhkd->bhqk"
(`spmd_einsum`); letters name the dimensions of the global shapes in order.
"""
function einsum(subscripts::AbstractString, a::ShardedArray, b::ShardedArray; kw...)
    text = String(subscripts)
    return _op(; kw...) do options, out
        LibSPMD.spmd_einsum(text, a, b, options, out)
    end
end

"""
    einsum(subscripts, xs...; out_sharding)

`jnp.einsum` of one, three or four operands ("ij,jk,kl->il",
`spmd_einsum_n`): three or four are contracted a pair at a time in
jnp.einsum's order (the fewest flops). No donation.
"""
function einsum(subscripts::AbstractString, xs::ShardedArray...; out_sharding::Union{Nothing,Sharding}=nothing)
    text = String(subscripts)
    arrays = collect(ShardedArray, xs)
    ptrs = Ptr{LibSPMD.spmd_array}[a.ptr for a in arrays]
    return GC.@preserve arrays begin
        _op(; out_sharding=out_sharding) do options, out
            LibSPMD.spmd_einsum_n(text, Csize_t(length(ptrs)), ptrs, options, out)
        end
    end
end

# ---- Shapes -------------------------------------------------------------------

"""
    permutedims(x, perm), permutedims(x), transpose(x)

`jnp.transpose(x, perm .- 1)`: dimension d of the result is dimension
perm[d] of x, the sharding moving with the dimensions (`spmd_transpose`);
without perm the dimensions are reversed (`x.T`).
"""
function Base.permutedims(x::ShardedArray, perm; kw...)
    p = Int64[_axis(d) for d in perm]
    return _op(; kw...) do options, out
        LibSPMD.spmd_transpose(x, Csize_t(length(p)), p, options, out)
    end
end

function Base.permutedims(x::ShardedArray; kw...)
    return _op(; kw...) do options, out
        LibSPMD.spmd_transpose(x, Csize_t(0), C_NULL, options, out)
    end
end
Base.transpose(x::ShardedArray) = permutedims(x)

"""
    reshape_rowmajor(x, dims...; out_sharding, donate)

`jnp.reshape(x, dims)`: the elements keep their row-major (C) order; one
dimension may be `:` (or -1) to infer (`spmd_reshape`). `Base.reshape` keeps
Julia's column-major order instead, so that `Array(reshape(x, d...)) ==
reshape(Array(x), d...)`.
"""
function reshape_rowmajor(x::ShardedArray, dims::Union{Integer,Colon}...; kw...)
    shape = Int64[d isa Colon ? -1 : Int64(d) for d in dims]
    return _op(; kw...) do options, out
        LibSPMD.spmd_reshape(x, Csize_t(length(shape)), shape, options, out)
    end
end

function Base.reshape(x::ShardedArray, dims::Union{Integer,Colon}...)
    (ndims(x) <= 1 && length(dims) <= 1) && return reshape_rowmajor(x, dims...)
    # Column-major order is the row-major order of the reversed dimensions.
    r = _closing(xt -> reshape_rowmajor(xt, reverse(dims)...), permutedims(x))
    return _closing(permutedims, r)
end
Base.reshape(x::ShardedArray, dims::Tuple) = reshape(x, dims...)

"""
    broadcast_to(x, dims...; out_sharding, donate)

`jnp.broadcast_to(x, dims)` by NumPy's rule (trailing dimensions aligned;
`spmd_broadcast_to`).
"""
function broadcast_to(x::ShardedArray, dims::Integer...; kw...)
    shape = _shape(dims)
    return _op(; kw...) do options, out
        LibSPMD.spmd_broadcast_to(x, Csize_t(length(shape)), shape, options, out)
    end
end

"""
    x[r1, r2, ...]

A slice, each index a UnitRange, a StepRange with a positive step or `:`
(`spmd_slice`, or `spmd_slice_strided` when a step is not 1: lax.slice);
the result keeps x's spec where its dimensions divide.
"""
function Base.getindex(x::ShardedArray{T,N}, ranges::Union{AbstractRange{<:Integer},Colon}...) where {T,N}
    length(ranges) == N || throw(ArgumentError("slice a $N-dimensional array with $N ranges"))
    shape = size(x)
    for r in ranges
        r isa Colon || step(r) >= 1 || throw(ArgumentError("slice with a step of $(step(r)): steps must be positive"))
    end
    start = Int64[r isa Colon ? 0 : first(r) - 1 for r in ranges]
    stop = Int64[r isa Colon ? shape[d] : isempty(r) ? first(r) - 1 : last(r) for (d, r) in enumerate(ranges)]
    strides = Int64[r isa Colon ? 1 : step(r) for r in ranges]
    if all(==(1), strides)
        return _op() do options, out
            LibSPMD.spmd_slice(x, Csize_t(N), start, stop, options, out)
        end
    end
    return _op() do options, out
        LibSPMD.spmd_slice_strided(x, Csize_t(N), start, stop, strides, options, out)
    end
end

"""
    dynamic_slice(x, start, sizes; out_sharding) -> ShardedArray

`lax.dynamic_slice` (`spmd_dynamic_slice`): the window of `sizes` whose
first element is `start` (1-based). As in JAX, a window that would pass an
edge is moved back inside x; a start below 1 counts from the end (0 is the
last element, as JAX's -1). The result is placed as a slice's.
"""
function dynamic_slice(x::ShardedArray{T,N}, start, sizes; kw...) where {T,N}
    length(start) == N && length(sizes) == N ||
        throw(ArgumentError("dynamic_slice of a $N-dimensional array takes $N starts and $N sizes"))
    from = Int64[s - 1 for s in start]
    n = Int64[s for s in sizes]
    return _op(; kw...) do options, out
        LibSPMD.spmd_dynamic_slice(x, Csize_t(N), from, n, options, out)
    end
end

"""
    concatenate(xs; dims=1, out_sharding), vcat(xs...), hcat(xs...)

`jnp.concatenate(xs, axis=dims-1)` (`spmd_concatenate`); `vcat` joins along
dimension 1, `hcat` along dimension 2 (no donation).
"""
function concatenate(xs; dims::Integer=1, out_sharding::Union{Nothing,Sharding}=nothing)
    arrays = collect(ShardedArray, xs)
    ptrs = Ptr{LibSPMD.spmd_array}[a.ptr for a in arrays]
    axis = _axis(dims)
    result = GC.@preserve arrays begin
        _op(; out_sharding=out_sharding) do options, out
            LibSPMD.spmd_concatenate(Csize_t(length(ptrs)), ptrs, axis, options, out)
        end
    end
    return result
end
Base.vcat(x::ShardedArray, xs::ShardedArray...) = concatenate((x, xs...); dims=1)
Base.hcat(x::ShardedArray, xs::ShardedArray...) = concatenate((x, xs...); dims=2)
