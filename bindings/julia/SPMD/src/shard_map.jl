# shard_map: a Julia function run on every device of a mesh at once, seeing
# its local blocks, with explicit collectives.
#
# The rule for callbacks: libspmd calls the function on its own device
# threads, which Julia did not start. Julia 1.9 and newer adopt such a thread
# the first time it enters Julia through a @cfunction pointer (the package
# requires 1.9). So that a garbage collection started on one device thread
# does not wait forever for a thread blocked in libspmd, the calls that wait
# for device threads (spmd_shard_map on the calling thread; the collectives
# and spmd_ctx_print on device threads) run in a GC-safe region (@gcsafe).
# An exception thrown by the function is caught on its device thread and
# becomes spmd_ctx_error(ctx, status, message): it never unwinds through C,
# and the shard_map then throws an SPMDError naming the device and the message.

mutable struct _Job  # mutable: passed to C as pointer_from_objref
    f::Any
    n_out::Int
end

"""
    ShardContext

The per-device view a [`shard_map`](@ref) function receives (a borrowed
`spmd_ctx`): valid only during that call and on its thread. Methods:
[`device_id`](@ref), [`mesh`](@ref), [`stream`](@ref), [`axis_index`](@ref),
[`axis_size`](@ref), [`input_count`](@ref), [`input`](@ref),
[`alloc`](@ref), [`set_output`](@ref), `print`/`println`, `error`, and the
collectives [`psum`](@ref), [`pmean`](@ref), [`pmax`](@ref), [`pmin`](@ref),
[`all_gather`](@ref), [`psum_scatter`](@ref), [`all_to_all`](@ref),
[`ppermute`](@ref).
"""
mutable struct ShardContext
    ptr::Ptr{LibSPMD.spmd_ctx}
    job::_Job
    live::Bool
end

Base.cconvert(::Type{Ptr{LibSPMD.spmd_ctx}}, c::ShardContext) = c
Base.unsafe_convert(::Type{Ptr{LibSPMD.spmd_ctx}}, c::ShardContext) = c.ptr

# Checked on every element access (the memory is freed once the function
# returns): one load and branch inline, the throw out of line.
@inline _live(c::ShardContext) = (c.live || _used_after_return(); nothing)
@noinline _used_after_return() =
    throw(SPMDError(LibSPMD.SPMD_ERR_INVALID_ARGUMENT,
                    "a block of a shard_map was used after its function returned"))

"""
    Block{T,N} <: AbstractArray{T,N}

A dense local block on one device (`spmd_block`), seen as a Julia array of
its local shape: `b[i, j]` is its element `(i-1, j-1)` although the memory
is row-major, so blocks index like the global array they are part of. Inputs
are read-only; blocks from [`alloc`](@ref) and the collectives are writable.
The memory is the device's and lives until the shard_map returns: copy what
must outlive it (`Array(b)`, `copy(b)`). [`rowmajor`](@ref) gives the memory
itself as a Julia array of reversed size.

Indexing and `rowmajor` need host memory: [`memory_kind`](@ref) `:host`
(cpu) or `:host_mapped` (sim; cuda with `callback_memory=:host_mapped`). A
`:device` block (cuda) throws an `SPMDError` instead; its memory is for
kernels queued on [`stream`](@ref)`(ctx)`, at `pointer(b)`.
"""
struct Block{T,N} <: AbstractArray{T,N}
    raw::LibSPMD.spmd_block
    ctx::ShardContext
    writable::Bool
    origin::String  # names the block in errors: "the block of input 1"
end

_block(c::ShardContext, raw::LibSPMD.spmd_block, writable::Bool, origin::String) =
    Block{eltype_of(raw.dtype),Int(raw.ndim)}(raw, c, writable, origin)

# The Block a C function fills through `spmd_block *out`.
function _block_out(f, c::ShardContext, writable::Bool, origin::String)
    out = _initialised(LibSPMD.spmd_block_init, LibSPMD.spmd_block)
    _check(f(out))
    return _block(c, out[], writable, origin)
end

"""
    memory_kind(b::Block) -> Symbol

Where the block's memory lies (`spmd_block.memory_kind`): `:host` (the cpu
platform) and `:host_mapped` (sim; cuda with `callback_memory=:host_mapped`)
are host memory that indexing reads and writes; `:device` (cuda) is device
memory that only kernels queued on [`stream`](@ref)`(ctx)` may touch.
"""
function memory_kind(b::Block)
    for (name, code) in pairs(_MEMORY_KINDS)
        code == b.raw.memory_kind && return name
    end
    return Symbol("memory_kind", b.raw.memory_kind)
end

# Host code touches only host memory: a device pointer read from the host
# faults, or reads another allocation's bytes. Checked on every element
# access as _live is, the throw out of line.
@inline function _host(b::Block)
    k = b.raw.memory_kind
    k == LibSPMD.SPMD_MEMORY_HOST || k == LibSPMD.SPMD_MEMORY_HOST_MAPPED || _not_host_memory(b)
    return nothing
end
@noinline _not_host_memory(b::Block) =
    throw(SPMDError(LibSPMD.SPMD_ERR_INVALID_ARGUMENT,
                    "$(b.origin) is $(memory_kind(b)) memory, which host code must not " *
                    "touch: queue kernels on stream(ctx) with pointer(block), or ask for " *
                    "mapped callback memory (Runtime(callback_memory=:host_mapped), or " *
                    "SPMD_CALLBACK_MEMORY=mapped)"))

"""
    pointer(b::Block{T}) -> Ptr{T}

The address of the block's memory, of its [`memory_kind`](@ref): a device
pointer for kernels queued on [`stream`](@ref)`(ctx)` when `:device`. Valid
until the shard_map returns; writing through it follows the block's rules
(inputs are read-only).
"""
Base.pointer(b::Block{T}) where {T} = Ptr{T}(b.raw.data)

Base.size(b::Block{T,N}) where {T,N} = ntuple(d -> Int(b.raw.shape[d]), Val(N))

@inline function _offset(b::Block{T,N}, I::NTuple{N,Int}) where {T,N}
    off = 0
    for d in 1:N
        off = off * Int(b.raw.shape[d]) + (I[d] - 1)
    end
    return off
end

Base.@propagate_inbounds function Base.getindex(b::Block{T,N}, I::Vararg{Int,N}) where {T,N}
    @boundscheck checkbounds(b, I...)
    _live(b.ctx)
    _host(b)
    return unsafe_load(Ptr{T}(b.raw.data), _offset(b, I) + 1)
end

Base.@propagate_inbounds function Base.setindex!(b::Block{T,N}, v, I::Vararg{Int,N}) where {T,N}
    b.writable || throw(ArgumentError("an input block of a shard_map is read-only"))
    @boundscheck checkbounds(b, I...)
    _live(b.ctx)
    _host(b)
    unsafe_store!(Ptr{T}(b.raw.data), convert(T, v), _offset(b, I) + 1)
    return b
end

"""
    rowmajor(b::Block{T,N}) -> Array{T,N}

The block's memory as a Julia array of size `reverse(size(b))`, without a
copy (`unsafe_wrap`): `rowmajor(b)[j, i] == b[i, j]`. Valid until the
shard_map returns; do not keep it longer. Host memory only (see
[`memory_kind`](@ref)): an `SPMDError` for a `:device` block.
"""
function rowmajor(b::Block{T,N}) where {T,N}
    _live(b.ctx)
    _host(b)
    return unsafe_wrap(Array, Ptr{T}(b.raw.data), reverse(size(b)))
end

# A block for a collective or an output: a Block as it is; a Julia array or
# number copied, row-major, into a new block of the context. libspmd reads
# every block passed in as the context's own kind of memory, so a pointer
# to Julia's memory would be misread where that is device memory: the copy
# goes through alloc, whose block says which it is, and the host fills it
# only when it is host memory (an SPMDError otherwise).
# Returns (a Ref to the spmd_block, what must stay alive while it is used).
_as_block(::ShardContext, b::Block) = (Ref(b.raw), b)
_as_block(c::ShardContext, x::Number) = _as_block(c, fill(x))

function _as_block(c::ShardContext, A::AbstractArray{T,N}) where {T,N}
    N <= LibSPMD.SPMD_MAX_NDIM ||
        throw(ArgumentError("a block has at most $(LibSPMD.SPMD_MAX_NDIM) dimensions"))
    b = _block_out(c, true, "the block a Julia array is copied into") do out
        LibSPMD.spmd_ctx_alloc(c, dtype(T), Csize_t(N), _shape(size(A)), out)
    end
    if !isempty(A)
        dest = rowmajor(b)  # host memory only
        N <= 1 ? copyto!(dest, A) : permutedims!(dest, A, _reversed(N))
    end
    return (Ref(b.raw), b)
end

# The text of `axes`: "x", or a tuple of names as Python writes it.
_axes_text(a::AbstractString) = String(a)
_axes_text(a::Symbol) = String(a)
function _axes_text(a::Tuple)
    names = String[string(x) for x in a]
    isempty(names) && return "()"
    length(names) == 1 && return "(" * names[1] * ",)"
    return "(" * join(names, ", ") * ")"
end

"""
    device_id(ctx) -> Int

The id of the device this call runs on (`spmd_ctx_device_id`).
"""
device_id(c::ShardContext) = Int(_value_out(out -> LibSPMD.spmd_ctx_device_id(c, out), Cint))

"""
    mesh(ctx) -> Mesh

The mesh the shard_map runs over (borrowed: `close` on it does nothing;
`spmd_ctx_mesh`).
"""
mesh(c::ShardContext) =
    _handle_out(out -> LibSPMD.spmd_ctx_mesh(c, out), Mesh, p -> Mesh(p, false))

"""
    stream(ctx) -> Ptr{Cvoid}

The queue this device's work goes to, for the function's own kernels: on
the cuda platform the device's `cudaStream_t` (CUDA.jl's `CuStream` wraps
such a handle), `C_NULL` on platforms whose work is not queued (cpu, sim)
(`spmd_ctx_stream`). Kernels queued on it run after the inputs are ready and
before any use of the blocks they write (collectives, outputs): the way to
compute on `:device` blocks ([`memory_kind`](@ref)), at `pointer(b)`.
"""
stream(c::ShardContext) = _value_out(out -> LibSPMD.spmd_ctx_stream(c, out), Ptr{Cvoid})

"""
    axis_index(ctx, axes) -> Int

`jax.lax.axis_index(axes)`: this device's index over the mesh axes `axes`
(a name, or a tuple of names; `()` is the device alone), 0-based as in JAX,
the numbering [`ppermute`](@ref) pairs use (`spmd_ctx_axis_index`).
"""
axis_index(c::ShardContext, axes) =
    Int(_value_out(out -> LibSPMD.spmd_ctx_axis_index(c, _axes_text(axes), out), Int64))

"""
    axis_size(ctx, axes) -> Int

`jax.lax.axis_size(axes)`: the product of the sizes of `axes`
(`spmd_ctx_axis_size`).
"""
axis_size(c::ShardContext, axes) =
    Int(_value_out(out -> LibSPMD.spmd_ctx_axis_size(c, _axes_text(axes), out), Int64))

"""
    input_count(ctx) -> Int

Number of inputs of the shard_map (`spmd_ctx_input_count`).
"""
input_count(c::ShardContext) = Int(_value_out(out -> LibSPMD.spmd_ctx_input_count(c, out), Csize_t))

"""
    input(ctx, i) -> Block

This device's block of input `i` (1-based), read-only (`spmd_ctx_input`).
"""
input(c::ShardContext, i::Integer) =
    _block_out(out -> LibSPMD.spmd_ctx_input(c, Csize_t(i - 1), out), c, false,
               "the block of input $i")

"""
    alloc(ctx, T, dims...) -> Block

A new zero-filled block of this device, owned by the context
(`spmd_ctx_alloc`); [`set_output`](@ref) takes it over without a copy.
"""
function alloc(c::ShardContext, ::Type{T}, dims::Integer...) where {T}
    shape = _shape(dims)
    return _block_out(c, true, "the block from alloc") do out
        LibSPMD.spmd_ctx_alloc(c, dtype(T), Csize_t(length(shape)), shape, out)
    end
end

"""
    ShardedArray(ctx, b::Block) -> ShardedArray

The block as an array on this device alone (`spmd_ctx_array`), so that the
ops (`sin`, `*`, `sum`, `einsum`, ...) apply to it and run this device's
own kernels; [`Block`](@ref)`(ctx, a)` turns a result back into a block. An
input's block is shared with the array, any other block copied.
"""
function ShardedArray(c::ShardContext, b::Block)
    raw = Ref(b.raw)
    return GC.@preserve raw b _array_out(out -> LibSPMD.spmd_ctx_array(c, raw, out))
end

"""
    Block(ctx, a::ShardedArray) -> Block

An array on this device alone (from `ShardedArray(ctx, b)` and ops on such
arrays) as a read-only block of the context, ready to read: for
[`set_output`](@ref) or a collective (`spmd_ctx_block`).
"""
Block(c::ShardContext, a::ShardedArray) =
    GC.@preserve a _block_out(out -> LibSPMD.spmd_ctx_block(c, a, out), c, false, "the block of an array")

"""
    set_output(ctx, i, x)

Sets this device's block of output `i` (1-based) to x: a [`Block`](@ref)
(one from `alloc` or a collective is taken over without a copy), a Julia
array (copied, in the global array's index order, into a new block of the
context: host memory only, see [`memory_kind`](@ref)) or a number (a
0-dimensional block) (`spmd_ctx_set_output`). A shard_map function may
instead return its outputs: one value, or a tuple of them.
"""
function set_output(c::ShardContext, i::Integer, x)
    block, keep = _as_block(c, x)
    _check(GC.@preserve keep LibSPMD.spmd_ctx_set_output(c, Csize_t(i - 1), block))
    return nothing
end

"""
    print(ctx, xs...), println(ctx, xs...)

`jax.debug.print`: hands the text to libspmd's print sink with this device's
id (`spmd_ctx_print`); by default stdout, one line per call. Julia's own
printing to `stdout` inside the function is not ordered with it.
(`spmd_ctx_printf` is not wrapped: format in Julia.)
"""
function Base.print(c::ShardContext, xs...)
    text = string(xs...)
    status = GC.@preserve text @gcsafe LibSPMD.spmd_ctx_print(c.ptr, _cstring(text))
    _check(status)
    return nothing
end
Base.println(c::ShardContext, xs...) = print(c, xs...)

"""
    error(ctx, message; status=LibSPMD.SPMD_ERR_CALLBACK)

Fails this device's call: throws an [`SPMDError`](@ref), which the callback
turns into `spmd_ctx_error(ctx, status, message)`; the shard_map then throws
an SPMDError with the status and the message, tagged with the device.
Any other exception does the same with status SPMD_ERR_CALLBACK and the
exception's message.
"""
Base.error(c::ShardContext, message::AbstractString;
           status::Integer=LibSPMD.SPMD_ERR_CALLBACK) = throw(SPMDError(Cint(status), String(message)))

# ---- Collectives ----------------------------------------------------------------

# Runs the collective `name`, call(ctx_ptr, x_ptr, axes_cstring, out_ptr) ->
# status, in a GC-safe region (it waits for the other devices), every
# argument a raw C value kept alive meanwhile, and wraps the result block.
function _collective(call, c::ShardContext, x, axes, name::String)
    block, keep = _as_block(c, x)
    text = _axes_text(axes)
    return _block_out(c, true, "the result of " * name) do out
        GC.@preserve c block keep text out begin
            @gcsafe call(c.ptr, Base.unsafe_convert(Ptr{LibSPMD.spmd_block}, block),
                         _cstring(text), Base.unsafe_convert(Ptr{LibSPMD.spmd_block}, out))
        end
    end
end

"""
    psum(ctx, x, axes) -> Block

`jax.lax.psum(x, axes)`: the sum of x over each group of the mesh axes
`axes` (a name, or a tuple of names), x a Block, a Julia array or a number
(`spmd_ctx_psum`). Every device of a group must call it alike.
[`pmean`](@ref), [`pmax`](@ref) and [`pmin`](@ref) are the same for the mean,
maximum and minimum.
"""
psum(c::ShardContext, x, axes) =
    _collective((cp, xp, ax, op) -> LibSPMD.spmd_ctx_psum(cp, xp, ax, op), c, x, axes, "psum")

pmean(c::ShardContext, x, axes) =
    _collective((cp, xp, ax, op) -> LibSPMD.spmd_ctx_pmean(cp, xp, ax, op), c, x, axes, "pmean")

pmax(c::ShardContext, x, axes) =
    _collective((cp, xp, ax, op) -> LibSPMD.spmd_ctx_pmax(cp, xp, ax, op), c, x, axes, "pmax")

pmin(c::ShardContext, x, axes) =
    _collective((cp, xp, ax, op) -> LibSPMD.spmd_ctx_pmin(cp, xp, ax, op), c, x, axes, "pmin")

"""
    all_gather(ctx, x, axes; dims=1, tiled=false) -> Block

`jax.lax.all_gather(x, axes, axis=dims-1, tiled=tiled)`: stacks the group's
blocks along a new dimension `dims` (1-based), or concatenates them along
`dims` when tiled (`spmd_ctx_all_gather`).
"""
function all_gather(c::ShardContext, x, axes; dims::Integer=1, tiled::Bool=false)
    axis = _axis(dims)
    t = Cint(tiled)
    return _collective(c, x, axes, "all_gather") do cp, xp, ax, op
        LibSPMD.spmd_ctx_all_gather(cp, xp, ax, axis, t, op)
    end
end

"""
    psum_scatter(ctx, x, axes; dims=1, tiled=false) -> Block

`jax.lax.psum_scatter(x, axes, scatter_dimension=dims-1, tiled=tiled)`
(`spmd_ctx_psum_scatter`).
"""
function psum_scatter(c::ShardContext, x, axes; dims::Integer=1, tiled::Bool=false)
    axis = _axis(dims)
    t = Cint(tiled)
    return _collective(c, x, axes, "psum_scatter") do cp, xp, ax, op
        LibSPMD.spmd_ctx_psum_scatter(cp, xp, ax, axis, t, op)
    end
end

"""
    all_to_all(ctx, x, axes; split_dims, concat_dims, tiled=false) -> Block

`jax.lax.all_to_all(x, axes, split_dims-1, concat_dims-1, tiled=tiled)`
(`spmd_ctx_all_to_all`).
"""
function all_to_all(c::ShardContext, x, axes; split_dims::Integer, concat_dims::Integer,
                    tiled::Bool=false)
    split_axis = _axis(split_dims)
    concat_axis = _axis(concat_dims)
    t = Cint(tiled)
    return _collective(c, x, axes, "all_to_all") do cp, xp, ax, op
        LibSPMD.spmd_ctx_all_to_all(cp, xp, ax, split_axis, concat_axis, t, op)
    end
end

"""
    ppermute(ctx, x, axes, pairs) -> Block

`jax.lax.ppermute(x, axes, perm)`: pairs `source => dest` of 0-based axis
indices (as [`axis_index`](@ref) gives); devices no pair sends to receive
zeros (`spmd_ctx_ppermute`).
"""
function ppermute(c::ShardContext, x, axes, pairs)
    flat = _flat_pairs(pairs)
    npairs = Csize_t(length(flat) ÷ 2)
    return GC.@preserve flat begin
        pp = _pointer_or_null(flat)
        _collective(c, x, axes, "ppermute") do cp, xp, ax, op
            LibSPMD.spmd_ctx_ppermute(cp, xp, ax, npairs, pp, op)
        end
    end
end

# ---- The callback and shard_map ------------------------------------------------

_is_output(x) = x isa Union{Block,AbstractArray,Number}

function _set_outputs(c::ShardContext, result)
    n = c.job.n_out
    n == 0 && return nothing
    if n == 1 && _is_output(result)
        set_output(c, 1, result)
    elseif result isa Tuple && length(result) == n && all(_is_output, result)
        for (i, r) in enumerate(result)
            set_output(c, i, r)
        end
    else
        throw(ArgumentError("the shard_map function returned a $(typeof(result)); with $n " *
                            "outputs it returns nothing (having called set_output), " *
                            (n == 1 ? "or the output" : "or a tuple of $n outputs")))
    end
    return nothing
end

function _describe(err)
    text = if err isa SPMDError
        err.message
    else
        try
            sprint(showerror, err)
        catch
            "a Julia exception of type $(typeof(err))"
        end
    end
    # A NUL would make the Cstring conversion throw, and the message be lost.
    return replace(text, '\0' => ' ')
end

# The C callback (spmd_shard_fn), on a device thread. Never throws.
function _shard_fn(ctxp::Ptr{LibSPMD.spmd_ctx}, user_data::Ptr{Cvoid})::Cint
    status = LibSPMD.SPMD_OK
    ctx = nothing
    try
        job = unsafe_pointer_to_objref(user_data)::_Job
        ctx = ShardContext(ctxp, job, true)
        result = job.f(ctx)
        result === nothing || _set_outputs(ctx, result)
    catch err
        status = LibSPMD.SPMD_ERR_CALLBACK
        try
            code = err isa SPMDError && err.status != LibSPMD.SPMD_OK ? err.status :
                   LibSPMD.SPMD_ERR_CALLBACK
            status = LibSPMD.spmd_ctx_error(ctxp, code, _describe(err))
        catch
        end
    finally
        ctx === nothing || (ctx.live = false)
    end
    return status
end

"""
    shard_map(f, mesh, inputs, in_specs, out_specs; check_rep=false, timeout_ms=0)

`shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs)(*inputs)`
(`spmd_shard_map`, or `spmd_shard_map_text` when every spec is given as
text). `inputs` are sharded arrays (one, or a vector/tuple); each spec a
[`Spec`](@ref) or its text ("x", "P('x', None)"); `in_specs` one per input.
`f(ctx::ShardContext)` runs once per mesh device, concurrently, each on a
device thread; it reads [`input`](@ref)s and either calls
[`set_output`](@ref) for every output or returns them (one value, or a
tuple). Returns the output (for a single out_spec not in a vector/tuple) or
a tuple of outputs.

Callbacks run on libspmd's device threads, which Julia adopts (Julia 1.9 or
newer). An exception thrown by `f` is caught on its thread and reported
through `spmd_ctx_error`; the shard_map then throws an [`SPMDError`](@ref)
with the device and the message. Blocks are valid only during the call.
Output of `print(ctx, ...)` goes to libspmd's sink (stdout); Julia's stdout is
flushed before the call so earlier output comes first.

`check_rep=true` verifies that outputs are equal along the mesh axes their
out_spec leaves out; `timeout_ms` bounds how long a collective waits (0:
\$SPMD_COLLECTIVE_TIMEOUT_MS, else 60 s).
"""
function shard_map(f, m::Mesh, inputs, in_specs, out_specs; check_rep::Bool=false,
                   timeout_ms::Integer=0)
    VERSION >= v"1.9" || throw(ErrorException(
        "shard_map needs Julia 1.9 or newer: its function runs on threads Julia did not start"))
    # The library would call f at every run of the program being recorded,
    # after this call has returned and f's closure may be gone.
    get(task_local_storage(), _RECORDING, nothing) === nothing ||
        throw(SPMDError(LibSPMD.SPMD_ERR_INVALID_ARGUMENT,
                        "shard_map: inside record: a shard_map records into a program from C only " *
                        "(its function would run at every run of the program); call it outside record"))
    ins = inputs isa ShardedArray ? ShardedArray[inputs] : collect(ShardedArray, inputs)
    single = !(out_specs isa Union{AbstractVector,Tuple})
    outs = single ? Any[out_specs] : collect(Any, out_specs)
    ispecs = in_specs isa Union{AbstractVector,Tuple} ? collect(Any, in_specs) : Any[in_specs]
    length(ispecs) == length(ins) ||
        throw(ArgumentError("shard_map: $(length(ins)) inputs but $(length(ispecs)) in_specs"))
    job = _Job(f, length(outs))
    options = _initialised(LibSPMD.spmd_shard_map_options_init, LibSPMD.spmd_shard_map_options)
    options[] = _with(options[]; check_rep=Cint(check_rep), timeout_ms=Int64(timeout_ms))
    fn = @cfunction(_shard_fn, Cint, (Ptr{LibSPMD.spmd_ctx}, Ptr{Cvoid}))
    in_ptrs = Ptr{LibSPMD.spmd_array}[x.ptr for x in ins]
    results = fill(Ptr{LibSPMD.spmd_array}(C_NULL), length(outs))
    flush(stdout)
    is_text(s) = s isa Union{AbstractString,Symbol}
    if all(is_text, ispecs) && all(is_text, outs)
        failure = _with_cstrings(ispecs) do cin
            _with_cstrings(outs) do cout
                st = GC.@preserve job m ins in_ptrs cin cout results options begin
                    @gcsafe LibSPMD.spmd_shard_map_text(
                        m.ptr, fn, pointer_from_objref(job), Csize_t(length(in_ptrs)),
                        pointer(in_ptrs), pointer(cin), Csize_t(length(results)), pointer(cout),
                        Base.unsafe_convert(Ptr{LibSPMD.spmd_shard_map_options}, options),
                        pointer(results))
                end
                _error_of(st)  # read at once, on this thread
            end
        end
    else
        made = Spec[]  # specs parsed here, closed after
        as_spec(s) = s isa Spec ? s : (push!(made, Spec(string(s))); made[end])
        failure = try
            in_s = Spec[as_spec(s) for s in ispecs]
            out_s = Spec[as_spec(s) for s in outs]
            in_sp = Ptr{LibSPMD.spmd_spec}[s.ptr for s in in_s]
            out_sp = Ptr{LibSPMD.spmd_spec}[s.ptr for s in out_s]
            st = GC.@preserve job m ins in_ptrs in_s out_s in_sp out_sp results options begin
                @gcsafe LibSPMD.spmd_shard_map(
                    m.ptr, fn, pointer_from_objref(job), Csize_t(length(in_ptrs)),
                    pointer(in_ptrs), pointer(in_sp), Csize_t(length(results)), pointer(out_sp),
                    Base.unsafe_convert(Ptr{LibSPMD.spmd_shard_map_options}, options),
                    pointer(results))
            end
            _error_of(st)  # read at once, on this thread
        finally
            foreach(close, made)
        end
    end
    Libc.flush_cstdio()
    failure === nothing || throw(failure)
    arrays = Tuple(_wrap_array(p) for p in results)
    return single ? arrays[1] : arrays
end
