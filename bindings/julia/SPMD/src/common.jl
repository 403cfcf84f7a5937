# Errors, dtypes and the helpers every file uses.

"""
    SPMDError(status, message) <: Exception

A libspmd call failed. `status` is the C status code (`LibSPMD.SPMD_ERR_*`,
a `Cint`), [`status_name`](@ref) its name, and `message` the library's
description (`spmd_last_error()`), naming the function, the argument and the
problem.

The message is read on the thread that made the failing call, right after
it: `spmd_last_error` is per OS thread, and a Julia task moves to another
thread only at a yield point, which neither a `ccall` nor the code between it
and the read contains (finalizers, which could call libspmd, are held off
while the message is copied).
"""
struct SPMDError <: Exception
    status::Cint
    message::String
end

"""
    status_name(status) -> String

libspmd's name of a status code (`spmd_status_string`): "invalid argument".
"""
status_name(status::Integer) = unsafe_string(LibSPMD.spmd_status_string(Cint(status)))
status_name(e::SPMDError) = status_name(e.status)

Base.showerror(io::IO, e::SPMDError) =
    print(io, "SPMDError: ", status_name(e.status), ": ", e.message)

# The SPMDError of a failed call: call it right after the ccall that
# returned `status`, on the same task, with nothing in between that yields
# or calls libspmd.
@noinline function _last_error(status::Integer)
    GC.enable_finalizers(false)
    message = try
        last_error()
    finally
        GC.enable_finalizers(true)
    end
    return SPMDError(Cint(status), message)
end

# The same for a status that may be SPMD_OK: nothing then.
_error_of(status::Integer) = status == LibSPMD.SPMD_OK ? nothing : _last_error(status)

@noinline _throw_last_error(status::Cint) = throw(_last_error(status))

@inline function _check(status::Integer)
    status == LibSPMD.SPMD_OK || _throw_last_error(Cint(status))
    return nothing
end

"""
    clear_error()

Forgets the calling thread's last libspmd error (`spmd_clear_error`).
"""
clear_error() = LibSPMD.spmd_clear_error()

"""
    last_error() -> String

The message of the calling thread's last failed libspmd call, "" when there
is none (`spmd_last_error`). [`SPMDError`](@ref) already carries it.
"""
last_error() = unsafe_string(LibSPMD.spmd_last_error())

"""
    version() -> VersionNumber

The version of the libspmd library loaded (`spmd_version_string`);
`version_number()` gives it as major*10000 + minor*100 + patch
(`spmd_version`), to compare with `LibSPMD.SPMD_VERSION_NUMBER`, the version
LibSPMD.jl was generated from.
"""
version() = VersionNumber(unsafe_string(LibSPMD.spmd_version_string()))
version_number() = Int(LibSPMD.spmd_version())

"""
    live_handles() -> Int

Number of libspmd handles alive in this process (`spmd_live_handles`), of
every kind. Compare before and after a piece of work (after `GC.gc()`, or
with every handle closed) to find leaks.
"""
live_handles() = Int(_value_out(out -> LibSPMD.spmd_live_handles(out), Csize_t))

# ---- Calls that block while other threads run Julia code ------------------

"""
    @gcsafe LibSPMD.spmd_xxx(args...)

Evaluates the arguments, then makes the call with the calling thread in a
GC-safe state (`jl_gc_safe_enter`/`jl_gc_safe_leave`), as `@ccall
gc_safe=true` does on Julia 1.12. Needed for the calls that wait for libspmd's
device threads while those run Julia code (shard_map, the collectives inside
it, spmd_ctx_print): a garbage collection one of them starts must not wait
for this thread. The arguments must already be of their C types (Ptr, Cstring,
Cint, Int64, Csize_t), so nothing is converted or allocated inside.
"""
macro gcsafe(call)
    Meta.isexpr(call, :call) || error("@gcsafe wants a call")
    fn = esc(call.args[1])
    temps = [gensym("arg") for _ in 2:length(call.args)]
    assigns = [:(local $t = $(esc(a))) for (t, a) in zip(temps, call.args[2:end])]
    return quote
        $(assigns...)
        local gc_state = ccall(:jl_gc_safe_enter, Int8, ())
        local result
        try
            result = $fn($(temps...))
        finally
            ccall(:jl_gc_safe_leave, Cvoid, (Int8,), gc_state)
        end
        result
    end
end

# ---- Structs ------------------------------------------------------------

# A copy of the isbits struct x with the fields named in kw replaced.
function _with(x::T; kw...) where {T}
    values = ntuple(fieldcount(T)) do i
        name = fieldname(T, i)
        haskey(kw, name) ? convert(fieldtype(T, i), kw[name]) : getfield(x, i)
    end
    return T(values...)
end

# A struct filled by its C _init function (struct_size set, defaults), as a
# Ref ready to pass; the _init functions are how libspmd wants bindings to
# fill them.
function _initialised(init, ::Type{T}) where {T}
    ref = Ref{T}()
    _check(init(ref, Csize_t(sizeof(T))))
    return ref
end

# The `_xxx_out(f)` helpers call f(out) for a C function that returns its
# result through the pointer `out`, check the status (an SPMDError on
# failure) and return the result as Julia wants it.

# A value of the isbits type T through `T *out`.
function _value_out(f, ::Type{T}) where {T}
    out = Ref{T}()
    _check(f(out))
    return out[]
end

# A new string through `char **out`, as a Julia String, freed on the C side.
function _string_out(f)
    out = Ref{Ptr{Cchar}}(C_NULL)
    _check(f(out))
    p = out[]
    try
        return unsafe_string(p)
    finally
        LibSPMD.spmd_string_free(p)
    end
end

# A C string the library lends (may be NULL).
function _borrowed_string(p::Ptr{Cchar})
    return p == C_NULL ? "" : unsafe_string(p)
end

# s as a Cstring, for a ccall argument made by hand (GC.@preserve s meanwhile):
# an ArgumentError for an embedded NUL, as ccall's own conversion throws.
_cstring(s::String) = Base.unsafe_convert(Cstring, Base.cconvert(Cstring, s))

# Strings as a Vector{Cstring} for a `const char *const *` argument: call
# f(ptrs) while the strings are kept alive.
function _with_cstrings(f, strings)
    strs = String[string(s) for s in strings]
    return GC.@preserve strs f(Cstring[_cstring(s) for s in strs])
end

# pointer(v), or NULL for an empty v (GC.@preserve v meanwhile).
_pointer_or_null(v::Vector{T}) where {T} = isempty(v) ? Ptr{T}(C_NULL) : pointer(v)

# `source => dest` pairs as the flat [s1, d1, s2, d2, ...] C takes.
_flat_pairs(pairs) = Int64[v for p in pairs for v in (first(p), last(p))]

# f(h), then close(h) whatever happens: for a handle made on the way.
function _closing(f, h)
    try
        return f(h)
    finally
        close(h)
    end
end

# ---- Element types ---------------------------------------------------------

"""
    BFloat16(x)

bfloat16, stored as its 16 bits (libspmd's `SPMD_BF16`). Converts to and from
`Float32` (round to nearest even); arithmetic is left to the sharded ops.
"""
struct BFloat16
    bits::UInt16
end

function BFloat16(x::Float32)
    isnan(x) && return BFloat16(0x7fc0)
    u = reinterpret(UInt32, x)
    u += 0x00007fff + ((u >> 16) & 0x00000001)
    return BFloat16(UInt16(u >> 16))
end
BFloat16(x::Real) = BFloat16(Float32(x))
Base.Float32(x::BFloat16) = reinterpret(Float32, UInt32(x.bits) << 16)
Base.Float64(x::BFloat16) = Float64(Float32(x))
Base.convert(::Type{BFloat16}, x::Real) = BFloat16(x)
Base.convert(::Type{Float32}, x::BFloat16) = Float32(x)
Base.show(io::IO, x::BFloat16) = print(io, "BFloat16(", Float32(x), ")")

# Julia element type <-> spmd_dtype.
const _DTYPES = (
    (Float32, LibSPMD.SPMD_F32), (Float64, LibSPMD.SPMD_F64), (Float16, LibSPMD.SPMD_F16),
    (BFloat16, LibSPMD.SPMD_BF16), (Int32, LibSPMD.SPMD_I32), (Int64, LibSPMD.SPMD_I64),
    (UInt8, LibSPMD.SPMD_U8), (Bool, LibSPMD.SPMD_BOOL), (Int8, LibSPMD.SPMD_I8),
    (Int16, LibSPMD.SPMD_I16), (UInt16, LibSPMD.SPMD_U16), (UInt32, LibSPMD.SPMD_U32),
)

"""
    dtype(T) -> Cint

libspmd's dtype of a Julia element type: Float32, Float64, Float16, BFloat16,
Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32 or Bool (throws
ArgumentError for another type).
"""
function dtype(::Type{T}) where {T}
    for (J, d) in _DTYPES
        T === J && return d
    end
    throw(ArgumentError("libspmd has no element type for $T (it has " *
                        join(string.(first.(_DTYPES)), ", ") * ")"))
end

"""
    eltype_of(dtype) -> Type

The Julia element type of a libspmd dtype code.
"""
function eltype_of(d::Integer)
    for (J, c) in _DTYPES
        c == d && return J
    end
    throw(SPMDError(LibSPMD.SPMD_ERR_INVALID_ARGUMENT, "unknown dtype $d"))
end

"""
    dtype_name(T) -> String

JAX's name of an element type ("float32", "bfloat16", "bool"),
`spmd_dtype_name`.
"""
dtype_name(::Type{T}) where {T} = unsafe_string(LibSPMD.spmd_dtype_name(dtype(T)))

"""
    dtype_size(T) -> Int

Bytes per element of T as libspmd stores it (`spmd_dtype_size`).
"""
dtype_size(::Type{T}) where {T} = Int(LibSPMD.spmd_dtype_size(dtype(T)))

"""
    dtype_from_name(name) -> Type

The element type JAX calls `name` ("float32", "int32", ...),
`spmd_dtype_from_name`; an [`SPMDError`](@ref) listing the names otherwise.
"""
function dtype_from_name(name::AbstractString)
    code = _value_out(out -> LibSPMD.spmd_dtype_from_name(String(name), out), LibSPMD.spmd_dtype)
    return eltype_of(code)
end

# Julia dims (1-based) <-> C axes (0-based); negative stays negative. There
# is no dimension 0 (C's axis 0 is dims=1): refused, as Julia's own dims are.
function _axis(d::Integer)
    d == 0 && throw(ArgumentError("dimension 0: dims are 1-based (negative counts from the end)"))
    return Int64(d > 0 ? d - 1 : d)
end
_shape(dims) = Int64[Int64(d) for d in dims]
