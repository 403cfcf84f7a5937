# Programs (experimental: spmd/experimental/program.h, which may change in
# any release): jax.jit for Julia. `record` calls a Julia function once on
# abstract arrays (a size, element type and sharding, no values, as JAX's
# tracers); every op on them records itself into the program instead of
# running, and `reshard` records a layout constraint. The compiled program
# is then called on sharded arrays as often as needed.

"""
    InputSpec(T, dims, sharding)
    InputSpec(x::ShardedArray)

One input of a program (`jax.ShapeDtypeStruct` with a sharding): element
type `T`, global size `dims` (Julia's: a `P("x")` sharding splits the first
dimension) and `sharding`; or those of the sharded array `x`. Every array a
run binds to it must have them.
"""
struct InputSpec
    eltype::DataType
    dims::Vector{Int64}
    sharding::Sharding
    InputSpec(::Type{T}, dims, s::Sharding) where {T} = new(T, _shape(dims), s)
end
InputSpec(x::ShardedArray) = InputSpec(eltype(x), size(x), sharding(x))

_input_spec(s::InputSpec) = s
_input_spec(x::ShardedArray) = InputSpec(x)

"""
    Program

A recorded, compiled program (`jax.jit(f)` lowered and compiled), made by
[`record`](@ref). Call it on sharded arrays, `p(x)` or `p(x, y)`, as often as
needed, from any number of tasks and threads at once. `show` (and `print`)
give its text: each value's element type, size and partition spec, each op
with the data it moves and its flops, the fused passes and the totals
(`jax.jit(f).lower(...).as_text()` and `.cost_analysis()`, written to be
read). Released by the garbage collector or `close(p)`.
"""
mutable struct Program <: Handle{LibSPMD.spmd_x_program}
    ptr::Ptr{LibSPMD.spmd_x_program}
    closed::Bool
    single::Bool  # f returned one array, not a tuple: a run returns one too
    Program(ptr::Ptr{LibSPMD.spmd_x_program}) = finalizer(close, new(ptr, false, true))
end
_destroy(p::Program) = LibSPMD.spmd_x_program_destroy(p.ptr)

# The task-local key of the arrays made while a record function runs:
# _wrap_array adds every array made on the task to the list, and record
# closes them when it returns.
const _RECORDING = :SPMD_recording

function _recorded!(x::ShardedArray)
    values = get(task_local_storage(), _RECORDING, nothing)
    values === nothing || push!(values, x)
    return x
end

# f(), its SPMDError with `what` in front of the library's message.
function _naming(f, what::AbstractString)
    try
        return f()
    catch e
        e isa SPMDError || rethrow()
        throw(SPMDError(e.status, string(what, ": ", e.message)))
    end
end

"""
    record(f, runtime, inputs; out_shardings=nothing, donate=()) -> Program

Records `f` as a program and compiles it: `jax.jit(f)` traced with abstract
arguments. `inputs` holds one [`InputSpec`](@ref) (or sharded array, whose
type, size and sharding are taken) per argument of `f`:

```julia
p = record(rt, [InputSpec(Float32, (8, 16), rows)]) do x
    2 .* sin.(x) .+ 1          # one fused pass per shard
end
y = p(device_put(A, rows))     # as often as needed
```

`f` receives abstract [`ShardedArray`](@ref)s with a size, element type
and sharding but no values (`Array(x)` throws): each op on them (operators,
broadcasts, `sum`, `matmul`, ...) is checked and placed as it would be
eagerly, so a mistake throws from the op that makes it, and `record`
rethrows it. `reshard(x, s)` records a layout constraint. `f` returns the
output, one array or a tuple of them; the program, called, returns the same.
Sharded arrays with values that `f` uses are kept as constants.

Every array made on this task while `f` runs (the arguments, the values the
ops make, arrays `f` makes itself) is closed when `record` returns: keep
none. `out_shardings` brings the outputs to these layouts (`jax.jit`'s):
a `Sharding`, or a tuple with one `Sharding` or `nothing` (the layout the
program places it in) per output. `donate` lists the arguments (1-based)
whose arrays every call consumes (`jax.jit`'s `donate_argnums`): after the
call they throw on use (close them), and the op reading one last may write
its result into its memory.

An `SPMDError` for a bad input (the message names the input as libspmd
counts them, `inputs[0]` for the first), an output that is not a value of
the program (`outputs[0]`, ...), or none.
"""
function record(f, rt::Runtime, inputs; out_shardings=nothing, donate=())
    specs = inputs isa Union{InputSpec,ShardedArray} ? [_input_spec(inputs)] :
            InputSpec[_input_spec(i) for i in inputs]
    p = _handle_out(out -> LibSPMD.spmd_x_program_create(rt, out), Program)
    values = ShardedArray[]
    done = false
    try
        result = task_local_storage(_RECORDING, values) do
            xs = map(enumerate(specs)) do (k, spec)
                dt = dtype(spec.eltype)
                _naming("record: inputs[$(k - 1)]") do
                    _array_out() do out
                        LibSPMD.spmd_x_program_input(p, spec.sharding, dt, Csize_t(length(spec.dims)),
                                                     spec.dims, out)
                    end
                end
            end
            f(xs...)
        end
        p.single = result isa ShardedArray
        outs = p.single ? ShardedArray[result] :
               result isa Union{Tuple,AbstractVector} ? collect(Any, result) : Any[result]
        isempty(outs) && throw(ArgumentError("record: f returned no arrays; a program needs an output"))
        all(o -> o isa ShardedArray, outs) ||
            throw(ArgumentError("record: f must return a ShardedArray or a tuple of them, " *
                                "not $(typeof(result))"))
        shardings = out_shardings === nothing ? fill(nothing, length(outs)) :
                    out_shardings isa Sharding ? Any[out_shardings] : collect(Any, out_shardings)
        length(shardings) == length(outs) ||
            throw(ArgumentError("record: out_shardings: $(length(shardings)) shardings for " *
                                "$(length(outs)) outputs"))
        for (k, (o, s)) in enumerate(zip(outs, shardings))
            s === nothing || s isa Sharding ||
                throw(ArgumentError("record: out_shardings[$k]: a Sharding or nothing, not $(typeof(s))"))
            sp = s === nothing ? Ptr{LibSPMD.spmd_sharding}(C_NULL) : s.ptr
            GC.@preserve s begin
                _naming("record: outputs[$(k - 1)]") do
                    _check(LibSPMD.spmd_x_program_output(p, o, sp))
                end
            end
        end
        for k in donate
            k isa Integer && k >= 1 ||
                throw(ArgumentError("record: donate: $k is not an input's number (1-based)"))
            _naming("record: donate") do
                _check(LibSPMD.spmd_x_program_donate(p, Csize_t(k - 1)))
            end
        end
        _check(LibSPMD.spmd_x_program_compile(p))
        done = true
        return p
    finally
        foreach(close, values)
        done || close(p)
    end
end

"""
    input_count(p::Program) -> Int
    output_count(p::Program) -> Int

The number of arguments a call of `p` takes, and of arrays it returns.
"""
input_count(p::Program) = Int(_value_out(out -> LibSPMD.spmd_x_program_input_count(p, out), Csize_t))
output_count(p::Program) = Int(_value_out(out -> LibSPMD.spmd_x_program_output_count(p, out), Csize_t))

"""
    (p::Program)(xs::ShardedArray...)

Runs the program on `xs`, one sharded array per input, of its element type
and size, laid out by its sharding (left as they are). Returns the output as
`f` returned it (one array or a tuple), each what the recorded ops give
eagerly, in values and layout. An `SPMDError` for a wrong number of
arguments or one of another size, element type, layout or runtime (the
message names it as libspmd counts, `inputs[0]` for the first).
"""
function (p::Program)(xs::ShardedArray...)
    n = _value_out(out -> LibSPMD.spmd_x_program_output_count(p, out), Csize_t)
    in_ptrs = Ptr{LibSPMD.spmd_array}[x.ptr for x in xs]
    results = fill(Ptr{LibSPMD.spmd_array}(C_NULL), Int(n))
    GC.@preserve xs begin
        _check(LibSPMD.spmd_x_program_run(p, Csize_t(length(in_ptrs)), in_ptrs, n, results))
    end
    outs = ShardedArray[]
    try
        for r in results
            push!(outs, _wrap_array(r))
        end
    catch
        # _wrap_array destroyed the one that failed; the others not yet wrapped.
        foreach(r -> LibSPMD.spmd_array_destroy(r), results[length(outs)+2:end])
        foreach(close, outs)
        rethrow()
    end
    return p.single ? only(outs) : Tuple(outs)
end

# The program's text (spmd_x_program_text), what show prints.
_program_text(p::Program) = _string_out(out -> LibSPMD.spmd_x_program_text(p, out))

Base.show(io::IO, p::Program) = print(io, p.closed ? "Program(closed)" : _program_text(p))
